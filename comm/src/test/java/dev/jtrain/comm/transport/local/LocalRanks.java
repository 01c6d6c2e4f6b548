package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroupOptions;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.transport.Transport;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BiFunction;
import java.util.function.UnaryOperator;

/**
 * Runs one body per rank, ranks as threads over {@link LocalTransport}, each with its own {@link ProcessGroup}
 * (Gloo's test style): how multi-rank code (DDP, ZeRO, checkpointing, a user's own) is tested in one JVM. Throws the
 * failure of the rank that failed first rather than the others' "peer gone" errors.
 */
public final class LocalRanks {
    private LocalRanks() {}

    public static <T> List<T> run(int world, BiFunction<Integer, ProcessGroup, T> body) throws Exception {
        return run(ProcessGroupOptions.defaults(), world, body);
    }

    /**
     * As {@link #run(int, BiFunction)}, the ranks declared on hosts: rank r on host {@code hostOfRank[r]} (named
     * "node" + index), as hybrid sharding and hierarchical collectives see a job across machines.
     */
    public static <T> List<T> runOnHosts(int[] hostOfRank, BiFunction<Integer, ProcessGroup, T> body) throws Exception {
        return runOnHosts(hostOfRank, null, body);
    }

    /** As {@link #runOnHosts(int[], BiFunction)}, counting the bytes each host sends off the host into {@code offHost}. */
    public static <T> List<T> runOnHosts(int[] hostOfRank, AtomicLongArray offHost, BiFunction<Integer, ProcessGroup, T> body)
            throws Exception {
        String[] names = Arrays.stream(hostOfRank).mapToObj(h -> "node" + h).toArray(String[]::new);
        HostTopology t = HostTopology.of(names, names);
        return run(ProcessGroupOptions.defaults().withTopology(t), hostOfRank.length, body,
                offHost == null ? x -> x : x -> new OffHostCounter(x, t, offHost));
    }

    /** As {@link #run(int, BiFunction)}, each rank's transport wrapped by {@code wrap} (a slowed or counting link). */
    public static <T> List<T> run(int world, UnaryOperator<Transport> wrap, BiFunction<Integer, ProcessGroup, T> body) throws Exception {
        return run(ProcessGroupOptions.defaults(), world, body, wrap);
    }

    /** As {@link #run(int, BiFunction)}, every rank's group with {@code options} (e.g. a forced algorithm). */
    public static <T> List<T> run(ProcessGroupOptions options, int world, BiFunction<Integer, ProcessGroup, T> body) throws Exception {
        return run(options, world, body, x -> x);
    }

    private static <T> List<T> run(ProcessGroupOptions options, int world, BiFunction<Integer, ProcessGroup, T> body,
                                   UnaryOperator<Transport> wrap) throws Exception {
        LocalTransport[] ts = LocalTransport.createGroup(world, 60_000);
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                final int rank = r;
                fs.add(pool.submit(() -> {
                    try (ProcessGroup pg = ProcessGroup.create(wrap.apply(ts[rank]), options.withTimeoutMs(60_000))) {
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
