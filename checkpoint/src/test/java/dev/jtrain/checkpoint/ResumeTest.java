package dev.jtrain.checkpoint;

import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.parallel.ShardScope;
import dev.jtrain.autograd.F;
import dev.jtrain.parallel.DataParallel;
import dev.jtrain.parallel.DataParallelOptions;
import dev.jtrain.parallel.DistributedDataParallel;
import dev.jtrain.parallel.FullyShardedDataParallel;
import dev.jtrain.parallel.SingleProcess;
import dev.jtrain.parallel.ZeroOptimizer;
import dev.jtrain.nn.Embedding;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.nn.LayerNorm;
import dev.jtrain.nn.Linear;
import dev.jtrain.nn.Module;
import dev.jtrain.nn.ShardedModel;
import dev.jtrain.nn.UnitHooks;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.state.Stateful;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Resume is exact: training 2N steps uninterrupted and training N, saving, throwing every object away, building fresh
 * ones (with a different initialisation, so only the checkpoint can make them agree), loading and training N more give
 * bitwise identical losses and parameters — for one process, DDP and ZeRO-1/2 on 2 ranks. Also: a checkpoint saved
 * under ZeRO-2 on 4 ranks loads into ZeRO-1 on 2 ranks with every optimizer element in place.
 */
@Timeout(120)
class ResumeTest {
    static final int VOCAB = 29, DIM = 13, BATCH = 8, T = 6, N = 3;
    static final long SEED = 77L;

    @TempDir
    Path root;

    /** Tied embedding/head with a LayerNorm and an MLP: matrices (decayed) and vectors (not), odd sizes. */
    static final class TinyNet extends Module implements ShardedModel {
        final Embedding wte;
        final LayerNorm ln;
        final Linear fc;
        UnitHooks hooks;

        TinyNet(long seed) {
            Rng rng = new Rng(seed);
            wte = registerModule("wte", new Embedding(Tensor.randn(rng, 0.1f, VOCAB, DIM)));
            ln = registerModule("ln", new LayerNorm(DIM, true));
            fc = registerModule("fc", new Linear(Tensor.randn(rng, 0.1f, DIM, DIM), Tensor.randn(rng, 0.02f, DIM)));
        }

        Tensor loss(int[] x, int[] y, int rows) {
            if (hooks != null) hooks.beforeForward(UnitHooks.ROOT);
            Tensor h = wte.forward(x, rows, T);
            h = h.add(UnitHooks.around(hooks, 0, h, t -> F.gelu(fc.forward(ln.forward(t)))));
            return F.crossEntropy(F.linear(h, wte.weight, null).reshape(rows * T, VOCAB), y);
        }

        /** ZeRO-3: one unit (ln, fc); the tied wte is the root. */
        @Override
        public List<List<Tensor>> units() {
            return List.of(List.of(ln.weight, ln.bias, fc.weight, fc.bias));
        }

        @Override
        public void setUnitHooks(UnitHooks hooks) {
            this.hooks = hooks;
        }
    }

    record Run(float[] losses, float[] params) {}

    static int[][] batch(int step, int rank, int world) {
        Rng rng = new Rng(SEED * 1000 + step);
        int[] x = new int[BATCH * T], y = new int[BATCH * T];
        for (int i = 0; i < x.length; i++) {
            x[i] = rng.nextInt(VOCAB);
            y[i] = (5 * x[i] + 2) % VOCAB;
        }
        int rows = BATCH / world;
        return new int[][]{Arrays.copyOfRange(x, rank * rows * T, (rank + 1) * rows * T), Arrays.copyOfRange(y, rank * rows * T, (rank + 1) * rows * T)};
    }

    static float[] train(DataParallel dp, TinyNet m, int rank, int world, int from, int to) {
        float[] losses = new float[to - from];
        for (int step = from; step < to; step++) {
            dp.zeroGrad();
            int[][] b = batch(step, rank, world);
            dp.beginMicroStep(true);
            Tensor loss = m.loss(b[0], b[1], BATCH / world);
            float l = loss.item();
            loss.backward();
            dp.finishGradients();
            dp.step(1e-2f, 1.0f);
            losses[step - from] = dp.average(l);
        }
        return losses;
    }

    static DataParallel strategy(String kind, FlatParameters f, TinyNet m, dev.jtrain.comm.ProcessGroup pg) {
        DataParallelOptions o = DataParallelOptions.defaults().withBuckets(256, 1024).withWeightDecay(0.1f);
        return switch (kind) {
            case "single" -> new SingleProcess(f, o);
            case "ddp" -> new DistributedDataParallel(f, pg, o, null);
            case "zero1" -> new ZeroOptimizer(f, pg, o.withZeroStage(1), null);
            case "zero2" -> new ZeroOptimizer(f, pg, o.withZeroStage(2), null);
            case "zero3" -> new FullyShardedDataParallel(f, m, pg, o.withZeroStage(3), null);
            case "hsdp1" -> new ZeroOptimizer(f, pg, o.withZeroStage(1).withShardWithin(ShardScope.HOST), null);
            case "hsdp3" -> new FullyShardedDataParallel(f, m, pg, o.withZeroStage(3).withShardWithin(ShardScope.HOST), null);
            default -> throw new IllegalArgumentException(kind);
        };
    }

    /** The full parameters in the flat layout: gathered from the shards under ZeRO-3 (collective). */
    static float[] parameters(DataParallel dp, FlatParameters f) {
        return dp instanceof FullyShardedDataParallel z ? z.gatherParameters() : f.data().clone();
    }

    static Map<String, Stateful> state(DataParallel dp) {
        Map<String, Stateful> s = new LinkedHashMap<>();
        s.put("model", dp.modelState());
        s.put("optimizer", dp.optimizerState());
        return s;
    }

    /** Runs body per rank; world 1 runs it on this thread with no process group. */
    static <T> List<T> ranks(int world, BiFunction<Integer, dev.jtrain.comm.ProcessGroup, T> body) throws Exception {
        return world == 1 ? java.util.Collections.singletonList(body.apply(0, null)) : LocalRanks.run(world, body);
    }

    /** As {@link #ranks}; hybrid sharding ("hsdp…") runs its ranks on 2 declared hosts, rank r on host r / (world / 2). */
    static <T> List<T> ranks(String kind, int world, BiFunction<Integer, dev.jtrain.comm.ProcessGroup, T> body) throws Exception {
        if (!kind.startsWith("hsdp")) return ranks(world, body);
        int[] hostOf = new int[world];
        for (int r = 0; r < world; r++) hostOf[r] = r / (world / 2);
        return LocalRanks.runOnHosts(hostOf, body);
    }

    @ParameterizedTest(name = "{0} on {1} rank(s), async save {2}")
    @CsvSource({"single,1,false", "single,1,true", "ddp,2,false", "zero1,2,true", "zero2,2,false", "zero3,2,true", "zero3,3,false",
            "hsdp3,4,true", "hsdp1,4,false"})
    void resumeIsBitwiseExact(String kind, int world, boolean async) throws Exception {
        System.out.println("ResumeTest seed=" + SEED + " kind=" + kind + " world=" + world);
        List<Run> straight = ranks(kind, world, (rank, pg) -> {
            TinyNet m = new TinyNet(SEED);
            FlatParameters f = FlatParameters.of(m);
            DataParallel dp = strategy(kind, f, m, pg);
            float[] l = train(dp, m, rank, world, 0, 2 * N);
            return new Run(Arrays.copyOfRange(l, N, 2 * N), parameters(dp, f));
        });
        ranks(kind, world, (rank, pg) -> {
            TinyNet m = new TinyNet(SEED);
            FlatParameters f = FlatParameters.of(m);
            DataParallel dp = strategy(kind, f, m, pg);
            train(dp, m, rank, world, 0, N);
            try (Checkpointer c = new Checkpointer(pg)) {
                c.save(root, state(dp), SaveOptions.at(N).withAsync(async));
                train(dp, m, rank, world, N, N + 1); // keeps training while the save finishes; must not leak into it
            }
            return null;
        });
        List<Run> resumed = ranks(kind, world, (rank, pg) -> {
            TinyNet m = new TinyNet(SEED + 1); // different init: only the checkpoint can make it agree
            FlatParameters f = FlatParameters.of(m);
            DataParallel dp = strategy(kind, f, m, pg);
            try (Checkpointer c = new Checkpointer(pg)) {
                c.load(root, state(dp), LoadOptions.latest().withBroadcast(world > 1));
            }
            assertThat(dp.stepCount()).isEqualTo(N);
            float[] l = train(dp, m, rank, world, N, 2 * N);
            return new Run(l, parameters(dp, f));
        });
        for (int r = 0; r < world; r++) {
            assertThat(resumed.get(r).losses()).as("losses of steps N..2N, rank %d", r).containsExactly(straight.get(r).losses());
            assertThat(resumed.get(r).params()).as("parameters after 2N steps, rank %d", r).containsExactly(straight.get(r).params());
        }
    }

    @Test
    void zero2OnFourRanksLoadsIntoZero1OnTwoRanksElementForElement() throws Exception {
        // reference: the full optimizer state as the 4 ZeRO-2 ranks hold it, assembled by flat range
        List<Map<String, float[]>> pieces = LocalRanks.run(4, (rank, pg) -> {
            TinyNet m = new TinyNet(SEED);
            FlatParameters f = FlatParameters.of(m);
            DataParallel dp = strategy("zero2", f, m, pg);
            train(dp, m, rank, 4, 0, N);
            try (Checkpointer c = new Checkpointer(pg)) {
                c.save(root, state(dp), SaveOptions.at(N)).join();
            }
            Map<String, float[]> mine = new LinkedHashMap<>();
            for (var t : dp.optimizerState().shards()) {
                float[] a = new float[(int) t.globalNumel()];
                Arrays.fill(a, Float.NaN);
                System.arraycopy(t.data(), t.dataOffset(), a, (int) t.globalOffset(), t.length());
                mine.merge(t.name(), a, (x, y) -> { for (int i = 0; i < x.length; i++) if (!Float.isNaN(y[i])) x[i] = y[i]; return x; });
            }
            mine.put("params", f.data().clone());
            return mine;
        });
        Map<String, float[]> full = new LinkedHashMap<>();
        for (Map<String, float[]> p : pieces)
            p.forEach((k, v) -> full.merge(k, v.clone(), (x, y) -> { for (int i = 0; i < x.length; i++) if (!Float.isNaN(y[i])) x[i] = y[i]; return x; }));
        List<String> problems = LocalRanks.run(2, (rank, pg) -> {
            TinyNet m = new TinyNet(SEED + 5);
            FlatParameters f = FlatParameters.of(m);
            DataParallel dp = strategy("zero1", f, m, pg);
            try (Checkpointer c = new Checkpointer(pg)) {
                c.load(root, state(dp), LoadOptions.latest());
            }
            if (!Arrays.equals(f.data(), full.get("params"))) return "parameters differ on rank " + rank;
            for (var t : dp.optimizerState().shards())
                for (int i = 0; i < t.length(); i++)
                    if (Float.floatToIntBits(t.data()[t.dataOffset() + i]) != Float.floatToIntBits(full.get(t.name())[(int) t.globalOffset() + i]))
                        return t.name() + "[" + (t.globalOffset() + i) + "] differs on rank " + rank;
            return dp.stepCount() == N ? null : "step " + dp.stepCount();
        });
        assertThat(problems).containsOnlyNulls();
    }

    /** The full optimizer state by name, assembled from every rank's shards, and the full parameters. */
    static Map<String, float[]> fullState(List<Map<String, float[]>> perRank) {
        Map<String, float[]> full = new LinkedHashMap<>();
        for (Map<String, float[]> p : perRank)
            p.forEach((k, v) -> full.merge(k, v.clone(), (x, y) -> { for (int i = 0; i < x.length; i++) if (!Float.isNaN(y[i])) x[i] = y[i]; return x; }));
        return full;
    }

    static Map<String, float[]> held(DataParallel dp, FlatParameters f) {
        Map<String, float[]> mine = new LinkedHashMap<>();
        for (var t : dp.optimizerState().shards()) {
            float[] a = new float[(int) t.globalNumel()];
            Arrays.fill(a, Float.NaN);
            System.arraycopy(t.data(), t.dataOffset(), a, (int) t.globalOffset(), t.length());
            mine.put(t.name(), a);
        }
        mine.put("params", parameters(dp, f));
        return mine;
    }

    /** ZeRO-3 on 2 ranks -> DDP on 3 -> ZeRO-3 on 4: every parameter and optimizer element arrives bit for bit each time. */
    @Test
    void zero3ReshardsToDdpAndBack() throws Exception {
        Path a = root.resolve("zero3"), b = root.resolve("ddp");
        Map<String, float[]> saved = hop(2, "zero3", SEED, null, a);
        Map<String, float[]> viaDdp = hop(3, "ddp", SEED + 3, a, b);
        Map<String, float[]> back = hop(4, "zero3", SEED + 4, b, null);
        assertThat(saved.keySet()).hasSizeGreaterThan(1);
        for (String k : saved.keySet()) {
            assertThat(viaDdp.get(k)).as("%s in DDP", k).containsExactly(saved.get(k));
            assertThat(back.get(k)).as("%s back in ZeRO-3", k).containsExactly(saved.get(k));
        }
    }

    /**
     * HSDP's ZeRO-3 on 2 hosts × 2 -> DDP on 3 -> HSDP's ZeRO-1 on 2 hosts × 2 -> ZeRO-3 on 2: every element bit for
     * bit. Each element of the hosts' replicas is written once, and both hosts share the writing.
     */
    @Test
    void hybridShardedCheckpointsReshardAndWriteEachReplicaOnce() throws Exception {
        Path a = root.resolve("hsdp3"), b = root.resolve("ddp"), c = root.resolve("hsdp1");
        Map<String, float[]> saved = hop(4, "hsdp3", SEED, null, a);
        Map<String, float[]> viaDdp = hop(3, "ddp", SEED + 3, a, b);
        Map<String, float[]> viaHsdp1 = hop(4, "hsdp1", SEED + 5, b, c);
        Map<String, float[]> back = hop(2, "zero3", SEED + 4, c, null);
        for (String k : saved.keySet()) {
            assertThat(viaDdp.get(k)).as("%s in DDP", k).containsExactly(saved.get(k));
            assertThat(viaHsdp1.get(k)).as("%s in HSDP ZeRO-1", k).containsExactly(saved.get(k));
            assertThat(back.get(k)).as("%s in ZeRO-3", k).containsExactly(saved.get(k));
        }
        for (Path dir : List.of(a, c)) {
            CheckpointMetadata md = CheckpointMetadata.read(dev.jtrain.checkpoint.storage.posix.CheckpointDirectory.stepDir(dir, N));
            java.util.Set<Integer> writers = new java.util.TreeSet<>();
            for (var e : md.items().entrySet()) {
                long written = 0;
                for (CheckpointMetadata.Piece p : e.getValue().pieces()) {
                    written += p.length();
                    writers.add(p.writer());
                }
                assertThat(written).as("%s: elements written in %s (each replica once)", e.getKey(), dir.getFileName())
                        .isEqualTo(e.getValue().numel());
            }
            assertThat(writers).as("ranks that wrote %s", dir.getFileName()).contains(0, 2); // both hosts share the writing
        }
    }

    /**
     * One leg: {@code kind} on {@code world} ranks (fresh init from {@code seed}) trains N steps, or loads from
     * {@code load}; saves to {@code save} if given; returns the full state it then holds.
     */
    static Map<String, float[]> hop(int world, String kind, long seed, Path load, Path save) throws Exception {
        return fullState(ranks(kind, world, (rank, pg) -> {
            TinyNet m = new TinyNet(seed);
            FlatParameters f = FlatParameters.of(m);
            DataParallel dp = strategy(kind, f, m, pg);
            try (Checkpointer c = new Checkpointer(pg)) {
                if (load == null) train(dp, m, rank, world, 0, N);
                else c.load(load, state(dp), LoadOptions.latest());
                if (save != null) c.save(save, state(dp), SaveOptions.at(N)).join();
            }
            if (dp.stepCount() != N) throw new AssertionError(kind + " on " + world + " ranks is at step " + dp.stepCount());
            return held(dp, f);
        }));
    }
}
