package dev.jtrain.comm;

import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.transport.local.LocalTransport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/** Runs one body per rank on its own thread, each with a world ProcessGroup over an in-process LocalTransport. */
final class LocalRanks {
    interface Body {
        void run(ProcessGroup g) throws Exception;
    }

    /** A fixed model, so tests do not spend time probing (and choose the same algorithm every run). */
    static final CostModel MODEL = CostModel.typicalSharedMemory(ProcessGroupOptions.DEFAULT_CHUNK_BYTES);

    private LocalRanks() {}

    static ProcessGroupOptions options() { return ProcessGroupOptions.defaults().withCostModel(MODEL); }

    static void run(int p, ProcessGroupOptions options, long transportTimeoutMs, Body body) throws Exception {
        run(p, rank -> options, transportTimeoutMs, body);
    }

    /** As {@link #run(int, ProcessGroupOptions, long, Body)}, with each rank's own options. */
    static void run(int p, java.util.function.IntFunction<ProcessGroupOptions> optionsOf, long transportTimeoutMs, Body body)
            throws Exception {
        LocalTransport[] t = LocalTransport.createGroup(p, transportTimeoutMs);
        AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<>(p);
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < p; r++) {
            int rank = r;
            Thread th = Thread.ofPlatform().name("rank-" + r).start(() -> {
                try (ProcessGroup g = ProcessGroup.create(t[rank], optionsOf.apply(rank))) {
                    body.run(g);
                } catch (Throwable e) {
                    errors.set(rank, e);
                }
            });
            threads.add(th);
        }
        for (Thread th : threads) th.join();
        for (int r = 0; r < p; r++) {
            Throwable e = errors.get(r);
            if (e != null) {
                AssertionError a = new AssertionError("rank " + r + " of " + p + " failed: " + e, e);
                for (int s = 0; s < p; s++) if (s != r && errors.get(s) != null) a.addSuppressed(errors.get(s));
                throw a;
            }
        }
    }
}
