package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.transport.local.OffHostCounter;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.local.LocalTransport;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.stream.IntStream;

/**
 * Ranks as threads over {@link LocalTransport}s, on hosts declared by a layout (rank r on host {@code layout[r]}):
 * runs one body per rank with a collective context that knows the topology, rethrows the first rank's failure, and
 * returns the bytes each host sent to ranks on other hosts.
 */
final class EmulatedHosts {
    private EmulatedHosts() {}

    interface Body {
        void run(int rank, CollectiveContext c, Arena arena) throws Exception;
    }

    /** @param shared buffers any thread may touch (else confined to the rank's thread) */
    static long[] run(int[] layout, DType dtype, boolean shared, Body body) throws Exception {
        int p = layout.length;
        int hosts = Arrays.stream(layout).max().orElseThrow() + 1;
        String[] names = IntStream.range(0, p).mapToObj(r -> "host" + layout[r]).toArray(String[]::new);
        HostTopology topology = HostTopology.of(names, names);
        LocalTransport[] t = LocalTransport.createGroup(p, 20_000);
        AtomicLongArray offHost = new AtomicLongArray(hosts);
        AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<>(p);
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < p; r++) {
            int rank = r;
            threads.add(Thread.ofPlatform().start(() -> {
                try (Arena arena = shared ? Arena.ofShared() : Arena.ofConfined()) {
                    Transport counting = new OffHostCounter(t[rank], topology, offHost);
                    body.run(rank, new CollectiveContext(counting, 0, dtype, ReduceOp.SUM, new ScratchPool(), 4096, topology), arena);
                } catch (Throwable e) {
                    errors.set(rank, e);
                } finally {
                    t[rank].close();
                }
            }));
        }
        for (Thread th : threads) th.join();
        for (int r = 0; r < p; r++) if (errors.get(r) != null) throw new AssertionError("rank " + r + ": " + errors.get(r), errors.get(r));
        long[] out = new long[hosts];
        for (int h = 0; h < hosts; h++) out[h] = offHost.get(h);
        return out;
    }
}
