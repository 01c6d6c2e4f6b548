package dev.jtrain.checkpoint.bench;

import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.CheckpointerOptions;
import dev.jtrain.checkpoint.LoadOptions;
import dev.jtrain.checkpoint.LoadReport;
import dev.jtrain.checkpoint.SaveOptions;
import dev.jtrain.checkpoint.SaveReport;
import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroups;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Times jtrain's checkpoint the way {@code ckpt_bench.py} times torch 1.13's sharded checkpoint, so the two print side
 * by side: 64 tensors x 16 MiB fp32 (1 GiB logical state), every rank of a launched job ({@code jtrain launch}):
 * <ul>
 *   <li>replicated: every rank holds all 1 GiB (DDP); jtrain writes each tensor once, balanced (512 MiB per rank)</li>
 *   <li>sharded: each tensor split in halves over 2 ranks (ZeRO); each rank writes its 512 MiB</li>
 * </ul>
 * Save = synchronous save with fsync and commit; training stall = what a training loop loses to a save, synchronous,
 * async, and async with the snapshot overlapped (see {@link #trainingLoop}); load cold = after {@code posix_fadvise(DONTNEED)} of the checkpoint files (what the peer script does;
 * {@code drop_caches} needs privileges containers lack); wall time = slowest rank between barriers.
 *
 * <p>Usage (every rank): {@code CheckpointBenchmark <dir> [reps]}; rank 0 prints the table.
 */
public final class CheckpointBenchmark {
    private static final int TENSORS = 64, NUMEL = 4 << 20;

    private CheckpointBenchmark() {}

    public static void main(String[] args) throws Throwable {
        Path root = Path.of(args[0]);
        int reps = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        try (ProcessGroup pg = ProcessGroups.initFromEnv(); Checkpointer c = new Checkpointer(pg, CheckpointerOptions.fromSystemProperties())) {
            Map<String, List<Double>> times = new LinkedHashMap<>();
            Map<String, String> notes = new LinkedHashMap<>();
            long step = 0;
            // The state lives for the whole run, as a model does: re-allocating 1.5 GiB of arrays per repetition made
            // the JVM's collector copy them (0.9 s young pauses, a full GC) and such a pause on either rank landed
            // inside whichever save came next.
            Map<String, Bench> states = Map.of("replicated", new Bench(true, pg.rank(), pg.size()),
                    "sharded", new Bench(false, pg.rank(), pg.size()));
            long burnIters = calibrateBurn(pg);
            for (int rep = 0; rep < reps; rep++) {
                for (String kind : List.of("replicated", "sharded")) {
                    Path dir = root.resolve(kind);
                    if (pg.rank() == 0) deleteTree(dir);
                    pg.barrier();
                    Bench state = states.get(kind);
                    state.fill(1);
                    Map<String, Stateful> s = Map.of("model", state);
                    long st = ++step;
                    SaveReport[] rep0 = new SaveReport[1];
                    double save = timed(pg, () -> rep0[0] = c.save(dir, s, SaveOptions.at(st)).join());
                    add(times, "jtrain " + kind + " save (fsync, commit)", save);
                    add(times, "  " + kind + ": rank 0 snapshot copy (the write follows it)", rep0[0].snapshotNanos() / 1e9);
                    add(times, "  " + kind + ": rank 0 write+fsync of its file", rep0[0].writeNanos() / 1e9);
                    if (rep == 0) {
                        notes.put("jtrain " + kind + " bytes written per rank", Arrays.toString(rep0[0].bytesWrittenPerRank()));
                        notes.put("jtrain " + kind + " planning first save", String.format("%.3f ms", rep0[0].planningNanos() / 1e6));
                    }
                    for (boolean bcast : kind.equals("replicated") ? List.of(false, true) : List.of(false)) {
                        String tag = "jtrain " + kind + " load" + (bcast ? " broadcast" : "");
                        state.fill(0);
                        evict(pg, dir);
                        LoadReport[] lr = new LoadReport[1];
                        double cold = timed(pg, () -> lr[0] = c.load(dir, s, LoadOptions.latest().withBroadcast(bcast)));
                        add(times, tag + " cold", cold);
                        add(times, "  " + tag + " cold: of which rank 0 read+verify+swap in", lr[0].readNanos() / 1e9);
                        state.check(1);
                        if (rep == 0) notes.put(tag + " bytes read by rank " + pg.rank() + " (of which past the page cache)",
                                lr[0].bytesRead() + " (" + lr[0].bytesReadDirect() + ")");
                        state.fill(0);
                        add(times, tag + " warm", timed(pg, () -> c.load(dir, s, LoadOptions.latest().withBroadcast(bcast))));
                        state.check(1);
                    }
                    step = trainingLoop(pg, c, dir, kind, state, step, burnIters, times, rep == 0 ? notes : null);
                    pg.barrier();
                    if (pg.rank() == 0) deleteTree(dir);
                }
            }
            if (pg.rank() == 0) {
                System.out.printf("jtrain; %d x %d MiB fp32 = 1 GiB logical state; world=%d; reps=%d; %s%n", TENSORS, NUMEL * 4 >> 20,
                        pg.size(), reps, root);
                System.out.printf("%-44s %9s %7s %18s  %s%n", "case", "median_s", "min_s", "GB/s(1GiB/median)", "each run (s)");
                times.forEach((k, v) -> {
                    List<Double> sorted = new ArrayList<>(v);
                    sorted.sort(null);
                    double med = sorted.get(sorted.size() / 2);
                    System.out.printf("%-44s %9.3f %7.3f %18.2f  %s%n", k, med, sorted.get(0), (1L << 30) / med / 1e9,
                            v.stream().map(x -> String.format("%.3f", x)).collect(Collectors.joining(" ")));
                });
                notes.forEach((k, v) -> System.out.printf("  %s: %s%n", k, v));
            }
        }
    }

    /**
     * The training stall, measured as a training loop feels it. A step is a stand-in for forward and backward
     * (compute-bound work on the training thread that reads no saved state, {@link #burn}), then
     * {@link Checkpointer#awaitSnapshot()}, then a stand-in for the optimizer step (every saved element rewritten,
     * memory-bound as AdamW is), then an all-reduce that keeps the ranks in step as DDP's does. A save is issued at the
     * start of a step, as the trainer issues it after the previous optimizer step. The stall of a save is the sum over
     * the steps from that one to the one in which it committed of (step time - median step time without a save), so
     * it counts the snapshot, the fence and the background writer's competition for the two cores (CRC32C, the kernel's
     * page-cache copy), not only the time {@code save} blocked. Each save is then loaded back and checked against the
     * state of the step it was issued in, which also checks that the overlapped snapshot's fence held.
     */
    private static long trainingLoop(ProcessGroup pg, Checkpointer c, Path dir, String kind, Bench state, long step,
                                     long burnIters, Map<String, List<Double>> times, Map<String, String> notes) {
        Map<String, Stateful> s = Map.of("model", state);
        List<Double> base = new ArrayList<>();
        int salt = 10;
        state.fill(salt);
        for (int i = 0; i < 4; i++) base.add(trainStep(pg, c, state, ++salt, burnIters, null));
        base.sort(null);
        double median = base.get(base.size() / 2);
        add(times, "  " + kind + ": training step without a save", median);
        for (String mode : List.of("sync", "async", "async, overlapped snapshot")) {
            long st = ++step;
            SaveOptions opt = SaveOptions.at(st).withKeepLast(2).withAsync(!mode.equals("sync"))
                    .withOverlapSnapshot(mode.contains("overlapped"));
            int savedSalt = salt;
            CompletableFuture<SaveReport>[] f = new CompletableFuture[1];
            double stall = trainStep(pg, c, state, ++salt, burnIters, () -> f[0] = c.save(dir, s, opt)) - median;
            // keep stepping until this rank's save committed on every rank (known to all through an all-reduce)
            for (int i = 0; i < 20 && !allDone(pg, f[0]); i++) stall += trainStep(pg, c, state, ++salt, burnIters, null) - median;
            SaveReport r = f[0].join();
            add(times, "jtrain " + kind + " training stall, " + mode, stall);
            if (!mode.equals("sync")) add(times, "  " + kind + ": save() blocked, " + mode, r.stallNanos() / 1e9);
            add(times, "  " + kind + ": rank 0 CPU time of the background threads, " + mode, r.writeCpuNanos() / 1e9);
            if (notes != null && mode.equals("sync"))
                notes.put("jtrain " + kind + " planning later save (cache hit=" + r.planCacheHit() + ")",
                        String.format("%.3f ms", r.planningNanos() / 1e6));
            if (notes != null && mode.contains("overlapped"))
                notes.put("jtrain " + kind + " overlapped snapshot copy on the copier thread, rank " + pg.rank(),
                        String.format("%.1f ms", r.snapshotNanos() / 1e6));
            // the checkpoint holds the state of the step the save was issued in, not a later optimizer step's
            state.fill(0);
            c.load(dir, s, LoadOptions.latest());
            state.check(savedSalt);
            state.fill(salt);
        }
        return step;
    }

    /** One stand-in training step (see {@link #trainingLoop}); {@code save} runs first if given. Seconds, slowest rank. */
    private static double trainStep(ProcessGroup pg, Checkpointer c, Bench state, int salt, long burnIters, Runnable save) {
        pg.barrier();
        long t0 = System.nanoTime();
        if (save != null) save.run();
        sink += burn(burnIters);
        c.awaitSnapshot();
        state.fill(salt);
        double[] t = {(System.nanoTime() - t0) / 1e9};
        pg.allReduce(MemorySegment.ofArray(t), 1, DType.FLOAT64, ReduceOp.MAX);
        return t[0];
    }

    private static volatile double sink;

    /** Compute-bound and memory-free: two dependent floating-point chains, the stand-in for forward and backward. */
    private static double burn(long iters) {
        double x = 1.0, y = 0.5;
        for (long i = 0; i < iters; i++) {
            x = x * 0.9999999 + y;
            y = y * 0.9999998 + 1e-9;
        }
        return x + y;
    }

    /** Iterations of {@link #burn} for about 300 ms, the same on every rank. */
    private static long calibrateBurn(ProcessGroup pg) {
        burn(20_000_000); // JIT
        long t0 = System.nanoTime();
        sink += burn(50_000_000);
        double[] perIter = {(System.nanoTime() - t0) / 5e7};
        pg.allReduce(MemorySegment.ofArray(perIter), 1, DType.FLOAT64, ReduceOp.MAX);
        return (long) (0.3e9 / perIter[0]);
    }

    /** True on every rank once {@code f} completed on every rank. */
    private static boolean allDone(ProcessGroup pg, CompletableFuture<?> f) {
        double[] d = {f.isDone() ? 1 : 0};
        pg.allReduce(MemorySegment.ofArray(d), 1, DType.FLOAT64, ReduceOp.MIN);
        return d[0] > 0;
    }

    private static void add(Map<String, List<Double>> times, String key, double t) {
        times.computeIfAbsent(key, k -> new ArrayList<>()).add(t);
    }

    /** Seconds between two barriers on the slowest rank. */
    private static double timed(ProcessGroup pg, Runnable body) {
        pg.barrier();
        long t0 = System.nanoTime();
        body.run();
        pg.barrier();
        double[] t = {(System.nanoTime() - t0) / 1e9};
        MemorySegment seg = MemorySegment.ofArray(t);
        pg.allReduce(seg, 1, DType.FLOAT64, ReduceOp.MAX);
        return t[0];
    }

    /** Drops the checkpoint's files from the page cache (posix_fadvise DONTNEED, as ckpt_bench.py's evict). */
    private static void evict(ProcessGroup pg, Path dir) throws Throwable {
        pg.barrier();
        if (pg.rank() == 0) {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            MethodHandle open = linker.downcallHandle(libc.find("open").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            MethodHandle fadvise = linker.downcallHandle(libc.find("posix_fadvise").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
            MethodHandle fsync = linker.downcallHandle(libc.find("fsync").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            MethodHandle close = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            List<Path> files;
            try (Stream<Path> w = Files.walk(dir)) {
                files = w.filter(Files::isRegularFile).toList();
            }
            try (Arena a = Arena.ofConfined()) {
                for (Path f : files) {
                    int fd = (int) open.invokeExact(a.allocateFrom(f.toString()), 0);
                    if (fd < 0) throw new IllegalStateException("cannot open " + f);
                    int r1 = (int) fsync.invokeExact(fd);
                    int r2 = (int) fadvise.invokeExact(fd, 0L, 0L, 4 /* POSIX_FADV_DONTNEED */);
                    int r3 = (int) close.invokeExact(fd);
                    if (r1 != 0 || r2 != 0 || r3 != 0) throw new IllegalStateException("evict failed for " + f);
                }
            }
        }
        pg.barrier();
    }

    private static void deleteTree(Path dir) throws Exception {
        if (!Files.exists(dir)) return;
        try (Stream<Path> w = Files.walk(dir)) {
            for (Path p : w.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }

    /** 64 tensors of 4M floats: whole and replicated, or the rank's contiguous part of each. */
    private static final class Bench implements Stateful {
        final boolean replicated;
        final int rank, world, local;
        final float[][] data = new float[TENSORS][];

        Bench(boolean replicated, int rank, int world) {
            this.replicated = replicated;
            this.rank = rank;
            this.world = world;
            this.local = replicated ? NUMEL : NUMEL / world;
            for (int i = 0; i < TENSORS; i++) data[i] = new float[local];
        }

        void fill(int salt) {
            for (int i = 0; i < TENSORS; i++) Arrays.fill(data[i], salt * 1000f + i);
        }

        /** Every element (a torn snapshot would differ in the middle of a tensor, not only at its ends). */
        void check(int salt) {
            for (int i = 0; i < TENSORS; i++) {
                float want = salt * 1000f + i;
                for (int j = 0; j < local; j++)
                    if (data[i][j] != want)
                        throw new IllegalStateException("load mismatch in tensor w" + i + "[" + j + "] on rank " + rank
                                + ": " + data[i][j] + ", want " + want);
            }
        }

        @Override
        public List<TensorShard> shards() {
            List<TensorShard> out = new ArrayList<>();
            for (int i = 0; i < TENSORS; i++)
                out.add(new TensorShard("w" + i, new long[]{NUMEL}, replicated ? 0 : (long) rank * local, data[i], 0, local, replicated));
            return out;
        }

        @Override public Map<String, String> metadata() { return Map.of(); }

        @Override public void restore(Map<String, String> metadata) {}
    }

}
