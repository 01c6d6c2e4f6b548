package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroupOptions;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * Runs one body per rank, ranks as threads over {@link LocalTransport}, each with its own {@link ProcessGroup}
 * (Gloo's test style): how multi-rank code (DDP, ZeRO, checkpointing, a user's own) is tested in one JVM. Throws the
 * failure of the rank that failed first rather than the others' "peer gone" errors.
 */
public final class LocalRanks {
    private LocalRanks() {}

    public static <T> List<T> run(int world, BiFunction<Integer, ProcessGroup, T> body) throws Exception {
        LocalTransport[] ts = LocalTransport.createGroup(world, 60_000);
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                final int rank = r;
                fs.add(pool.submit(() -> {
                    try (ProcessGroup pg = ProcessGroup.create(ts[rank], ProcessGroupOptions.defaults().withTimeoutMs(60_000))) {
                        return body.apply(rank, pg);
                    }
                }));
            }
            List<T> out = new ArrayList<>();
            Exception first = null;
            for (Future<T> f : fs) {
                try {
                    out.add(f.get(120, TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    // The rank that failed first is the interesting one; the others only see it vanish.
                    boolean comm = e.getCause() instanceof CommException;
                    if (first == null || (!comm && first.getCause() instanceof CommException)) first = e;
                }
            }
            if (first != null) throw first;
            return out;
        } finally {
            pool.shutdownNow();
            for (LocalTransport t : ts) t.close();
        }
    }
}
