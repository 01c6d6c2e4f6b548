package dev.jtrain.comm.bench;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroups;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.algo.Collective;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Collective benchmark in the manner of nccl-tests and the peer scripts (mpi_bench.py, gloo_bench.py), so figures
 * can be put side by side: float32 SUM; each timed iteration is a barrier then one blocking op; the iteration's time
 * is the slowest rank's; the report gives the median, plus a "pipelined" figure of back-to-back ops. Results are
 * checked once per size before timing (a benchmark of a wrong answer measures nothing).
 *
 * <p>Collective: every rank of the group calls {@link #run}; all get the same results. {@link #main} is the entry
 * point of each process started by {@code jtrain bench comm --nproc N} (it initialises from the launcher's env).
 */
public final class CommBenchmark {
    private CommBenchmark() {}

    public static List<BenchResult> run(ProcessGroup g, BenchConfig c) {
        List<BenchResult> out = new ArrayList<>();
        int p = g.size();
        String transport = (p == 1 ? g.linkKind(0) : g.linkKind((g.rank() + 1) % p)).label();
        for (long size : c.sizesBytes()) {
            try (Arena arena = Arena.ofShared()) {
                out.add(measure(g, c, size, transport, arena, out.isEmpty() ? FIRST_WARMUP_NANOS : WARMUP_NANOS_PER_SIZE));
            }
        }
        return out;
    }

    private static BenchResult measure(ProcessGroup g, BenchConfig c, long size, String transport, Arena arena, long warmupNanos) {
        int p = g.size(), r = g.rank();
        long n = Math.max(1, size / 4);                   // elements of the "size" buffer
        long m = Math.max(1, n / p);                      // per-rank block for the block-wise ops
        MemorySegment in, out;
        Runnable op;
        Collective kind;
        long bytes;
        switch (c.op()) {
            case "all_reduce" -> {
                in = arena.allocate(n * 4, 64);
                out = in;
                bytes = n * 4;
                kind = Collective.ALL_REDUCE;
                op = () -> g.allReduce(in, n, DType.FLOAT32, ReduceOp.SUM);
            }
            case "broadcast" -> {
                in = arena.allocate(n * 4, 64);
                out = in;
                bytes = n * 4;
                kind = Collective.BROADCAST;
                op = () -> g.broadcast(in, n, DType.FLOAT32, 0);
            }
            case "all_gather" -> {
                in = arena.allocate(m * 4, 64);
                out = arena.allocate(m * p * 4, 64);
                bytes = m * p * 4;
                kind = Collective.ALL_GATHER;
                op = () -> g.allGather(in, out, m, DType.FLOAT32);
            }
            case "reduce_scatter" -> {
                in = arena.allocate(m * p * 4, 64);
                out = arena.allocate(m * 4, 64);
                bytes = m * p * 4;
                kind = Collective.REDUCE_SCATTER;
                op = () -> g.reduceScatter(in, out, m, DType.FLOAT32, ReduceOp.SUM);
            }
            default -> {
                in = arena.allocate(m * p * 4, 64);
                out = arena.allocate(m * p * 4, 64);
                bytes = m * p * 4;
                kind = Collective.ALL_TO_ALL;
                op = () -> g.allToAll(in, out, m, DType.FLOAT32);
            }
        }
        verify(g, c.op(), in, out, m, op);
        int iters = c.itersFor(bytes), warm = c.warmupFor(bytes);
        for (int i = 0; i < warm; i++) op.run();
        if (c.warmup() == 0) warmUpFor(g, op, arena, warmupNanos); // explicit --warmup N: exactly N
        MemorySegment times = arena.allocate(8L * iters, 8);
        for (int i = 0; i < iters; i++) {
            g.barrier();
            long t0 = System.nanoTime();
            op.run();
            times.setAtIndex(ValueLayout.JAVA_DOUBLE, i, (System.nanoTime() - t0) * 1e-3);
        }
        g.barrier();
        long t0 = System.nanoTime();
        for (int i = 0; i < iters; i++) op.run();
        g.barrier();
        double pipelinedUs = (System.nanoTime() - t0) * 1e-3 / iters;
        g.allReduce(times, iters, DType.FLOAT64, ReduceOp.MAX);
        double[] t = times.toArray(ValueLayout.JAVA_DOUBLE);
        Arrays.sort(t);
        double median = iters % 2 == 1 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
        String algo = g.algorithmFor(kind, bytes).name();
        return new BenchResult(c.op(), p, transport, bytes, bytes / 4, algo, median, pipelinedUs, iters);
    }

    /** Nanoseconds of warm-up per size: C2 compiles a size's own loops (chunking, reduce kernels) only after it ran a while. */
    static final long WARMUP_NANOS_PER_SIZE = 1_500_000_000L;
    /** The first size also pays for compiling the whole call path; with 4 ranks on 2 cores C2 gets half a core. */
    static final long FIRST_WARMUP_NANOS = 5_000_000_000L;

    /**
     * A JVM runs the first thousands of calls of any path in the interpreter or in lightly optimised code, and C2
     * compiles while the ranks compete for the same two cores; timing that would measure the JIT, not the library
     * (C and Python peers have no such phase). So each size first runs {@code op} untimed for about
     * {@link #WARMUP_NANOS_PER_SIZE} ({@link #FIRST_WARMUP_NANOS} for the first), as JMH's time-based warm-up does: in rounds of doubling length, after each
     * of which the ranks agree on the slowest rank's elapsed time (an all-reduce MAX), so all run the same count.
     * Every other call is preceded by a barrier, as in the timed loop: otherwise the barrier's own path is still
     * interpreted when timing starts, ranks leave it out of step, and the first size's median comes out several
     * times too high when ranks outnumber cores.
     */
    private static void warmUpFor(ProcessGroup g, Runnable op, Arena arena, long warmupNanos) {
        MemorySegment t = arena.allocate(8, 8);
        long start = System.nanoTime();
        for (int round = 1; ; round = Math.min(round * 2, 4096)) {
            for (int i = 0; i < round; i++) {
                if ((i & 1) == 0) g.barrier();
                op.run();
            }
            t.set(ValueLayout.JAVA_LONG, 0, System.nanoTime() - start);
            g.allReduce(t, 1, DType.INT64, ReduceOp.MAX);
            if (t.get(ValueLayout.JAVA_LONG, 0) >= warmupNanos) return;
        }
    }

    /** One op on known data, checked at the first and last element of every block. */
    private static void verify(ProcessGroup g, String op, MemorySegment in, MemorySegment out, long m, Runnable run) {
        int p = g.size(), r = g.rank();
        long n = in.byteSize() / 4;
        for (long i = 0; i < n; i++) {
            float v = switch (op) {
                case "all_to_all" -> r * p + (int) (i / m);
                case "broadcast" -> r == 0 ? 1 + (i % 7) : -1;
                default -> r + 1;
            };
            in.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
        }
        run.run();
        long outN = out.byteSize() / 4;
        for (long i = 0; i < outN; i++) {
            if (i % m != 0 && i % m != m - 1) continue;
            float want = switch (op) {
                case "all_reduce", "reduce_scatter" -> p * (p + 1) / 2f;
                case "broadcast" -> 1 + (i % 7);
                case "all_gather" -> (int) (i / m) + 1;
                default -> (int) (i / m) * p + r;
            };
            float got = out.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            if (got != want) {
                throw new IllegalStateException("benchmark self-check failed, refusing to time a wrong result: op=" + op
                        + " rank=" + r + " element=" + i + " expected=" + want + " got=" + got + " bytes=" + in.byteSize());
            }
        }
    }

    public static String table(List<BenchResult> results) {
        StringBuilder b = new StringBuilder();
        if (!results.isEmpty()) {
            BenchResult f = results.getFirst();
            b.append(String.format(Locale.ROOT, "# jtrain comm benchmark: %s, %d ranks, transport %s, float32 SUM%n",
                    f.op(), f.ranks(), f.transport()));
        }
        b.append("# ").append(BenchResult.header().replace("\n", "\n# ")).append('\n');
        for (BenchResult res : results) b.append("  ").append(res.row()).append('\n');
        return b.toString();
    }

    public static String json(List<BenchResult> results) {
        StringBuilder b = new StringBuilder("[\n");
        for (int i = 0; i < results.size(); i++) b.append("  ").append(results.get(i).json()).append(i + 1 < results.size() ? ",\n" : "\n");
        return b.append("]\n").toString();
    }

    /**
     * Entry point of each benchmark process: {@code --op OP --sizes SPEC [--iters N] [--warmup N] [--json]
     * [--report-file PATH]}. Initialises from the launcher's environment; rank 0 writes the report.
     */
    public static void main(String[] args) throws IOException {
        String op = "all_reduce", sizes = "4K:256M", report = null;
        int iters = 0, warmup = 0;
        boolean json = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--op" -> op = args[++i];
                case "--sizes" -> sizes = args[++i];
                case "--iters" -> iters = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--report-file" -> report = args[++i];
                case "--json" -> json = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; usage: CommBenchmark --op OP --sizes 4K:256M [--iters N] [--warmup N] [--json] [--report-file PATH]");
            }
        }
        BenchConfig config = new BenchConfig(op, BenchConfig.parseSizes(sizes), iters, warmup);
        try (ProcessGroup g = ProcessGroups.initFromEnv()) {
            List<BenchResult> results = run(g, config);
            if (g.rank() == 0) {
                String text = json ? json(results) : table(results);
                if (report != null) Files.writeString(Path.of(report), text, StandardCharsets.UTF_8);
                else System.out.print(text);
            }
            g.barrier();
        }
    }
}
