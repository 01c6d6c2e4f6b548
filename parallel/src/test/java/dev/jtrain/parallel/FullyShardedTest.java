package dev.jtrain.parallel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.jtrain.autograd.F;
import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.nn.Embedding;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.nn.LayerNorm;
import dev.jtrain.nn.Linear;
import dev.jtrain.nn.Module;
import dev.jtrain.nn.ShardedModel;
import dev.jtrain.nn.UnitHooks;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.state.TensorShard;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * ZeRO-3 ({@link FullyShardedDataParallel}) on a model of four residual blocks: the order units are gathered in
 * (forward, then backward in reverse, each next one prefetched), at most two units gathered at once, reduce-scatters
 * launched from inside backward (before the earlier units' backward gathers), the per-rank memory of 16 B/param / N,
 * checkpoint state as shards that cover every parameter once, and training that matches one process.
 */
class FullyShardedTest {
    static final int VOCAB = 29, DIM = 18, BLOCKS = 4, ROWS = 4, T = 6;

    /** Embedding (tied head), then BLOCKS blocks x + W2·gelu(W1·ln(x)), each one unit. */
    static final class DeepTinyLm extends Module implements ShardedModel {
        final Embedding wte;
        final List<LayerNorm> lns = new ArrayList<>();
        final List<Linear> ups = new ArrayList<>(), downs = new ArrayList<>();
        UnitHooks hooks;

        DeepTinyLm(long seed) {
            Rng rng = new Rng(seed);
            wte = registerModule("wte", new Embedding(Tensor.randn(rng, 0.1f, VOCAB, DIM)));
            for (int b = 0; b < BLOCKS; b++) {
                lns.add(registerModule("ln" + b, new LayerNorm(DIM, true)));
                ups.add(registerModule("up" + b, new Linear(Tensor.randn(rng, 0.1f, 2 * DIM + 1, DIM), Tensor.zeros(2 * DIM + 1))));
                downs.add(registerModule("down" + b, new Linear(Tensor.randn(rng, 0.1f, DIM, 2 * DIM + 1), null)));
            }
        }

        Tensor loss(int[] x, int[] y) {
            if (hooks != null) hooks.beforeForward(UnitHooks.ROOT);
            Tensor h = wte.forward(x, ROWS, T);
            for (int b = 0; b < BLOCKS; b++) {
                int i = b;
                h = UnitHooks.around(hooks, b, h, t -> t.add(downs.get(i).forward(F.gelu(ups.get(i).forward(lns.get(i).forward(t))))));
            }
            return F.crossEntropy(F.linear(h, wte.weight, null).reshape(ROWS * T, VOCAB), y);
        }

        @Override
        public List<List<Tensor>> units() {
            List<List<Tensor>> units = new ArrayList<>();
            for (int b = 0; b < BLOCKS; b++)
                units.add(List.of(lns.get(b).weight, lns.get(b).bias, ups.get(b).weight, ups.get(b).bias, downs.get(b).weight));
            return units;
        }

        @Override
        public void setUnitHooks(UnitHooks hooks) {
            this.hooks = hooks;
        }
    }

    static int[][] batch(int step, int rank, int world) {
        Rng rng = new Rng(77 + step);
        int[] x = new int[ROWS * T * world], y = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            x[i] = rng.nextInt(VOCAB);
            y[i] = (5 * x[i] + 1) % VOCAB;
        }
        int n = ROWS * T;
        return new int[][]{java.util.Arrays.copyOfRange(x, rank * n, rank * n + n), java.util.Arrays.copyOfRange(y, rank * n, rank * n + n)};
    }

    /** @param prefetched for every forward and backward of a unit but the last: was the next unit's gather already launched? */
    record Observed(List<Integer> gatherOrder, int maxGathered, List<String> events, MemoryReport memory, float[] params,
                    float[] norms, List<TensorShard> modelShards, List<Boolean> prefetched) {}

    /** Around the installed hooks: once a unit's hook returned, has the next unit's all-gather gone out? */
    static UnitHooks watching(UnitHooks inner, List<String> events, List<Boolean> prefetched) {
        return new UnitHooks() {
            @Override
            public void beforeForward(int unit) {
                inner.beforeForward(unit);
                if (unit >= 0 && unit + 1 < BLOCKS) prefetched.add(events.contains("all_gather unit " + (unit + 1)));
            }

            @Override public void afterForward(int unit) { inner.afterForward(unit); }

            @Override
            public void beforeBackward(int unit) {
                inner.beforeBackward(unit);
                if (unit > 0) prefetched.add(events.stream().filter(("all_gather unit " + (unit - 1))::equals).count() == 2);
            }

            @Override public void afterBackward(int unit) { inner.afterBackward(unit); }
        };
    }

    static Observed trainSharded(int world, int steps) throws Exception {
        List<Observed> all = LocalRanks.run(world, (rank, pg) -> {
            DeepTinyLm model = new DeepTinyLm(5 + rank); // rank 0's init is broadcast
            FlatParameters flat = FlatParameters.of(model);
            List<String> events = Collections.synchronizedList(new ArrayList<>());
            CommTrace trace = new CommTrace() {
                @Override public void begin(String name, long bytes) { events.add(name); }

                @Override public void end(String name) {}
            };
            var dp = new FullyShardedDataParallel(flat, model, pg, DataParallelOptions.defaults().withZeroStage(3), trace);
            List<Boolean> prefetched = new ArrayList<>();
            model.hooks = watching(model.hooks, events, prefetched);
            List<Integer> firstStepOrder = null;
            float[] norms = new float[steps];
            List<String> firstStepEvents = null;
            for (int s = 0; s < steps; s++) {
                dp.zeroGrad();
                dp.beginMicroStep(true);
                int[][] b = batch(s, rank, world);
                model.loss(b[0], b[1]).backward();
                dp.finishGradients();
                norms[s] = dp.step(1e-2f, 1f);
                if (s == 0) {
                    firstStepOrder = dp.gatherOrder();
                    firstStepEvents = List.copyOf(events);
                }
            }
            return new Observed(firstStepOrder, dp.maxGatheredUnits(), firstStepEvents, dp.memory(), dp.gatherParameters(),
                    norms, dp.modelState().shards(), prefetched.subList(0, 2 * (BLOCKS - 1)));
        });
        return all.get(0);
    }

    @Test
    @Timeout(120)
    void unitsAreGatheredInForwardThenReverseOrderWithAtMostTwoAtOnce() throws Exception {
        Observed o = trainSharded(2, 2);
        assertThat(o.gatherOrder()).as("forward 0..3 (each prefetched while the one before runs), backward 3..0")
                .containsExactly(0, 1, 2, 3, 3, 2, 1, 0);
        assertThat(o.maxGathered()).as("the unit running and the one prefetched").isEqualTo(2);
        assertThat(o.prefetched()).as("the next unit's gather is out while this one runs, forward and backward").containsOnly(true);
    }

    @Test
    @Timeout(120)
    void reduceScattersLaunchDuringBackward() throws Exception {
        List<String> e = trainSharded(2, 1).events();
        // unit 3's gradients go out as soon as its backward is done: before units 2, 1 and 0 are gathered for theirs
        int rs3 = e.indexOf("reduce_scatter unit 3"), gather1Backward = e.lastIndexOf("all_gather unit 1");
        assertThat(rs3).isGreaterThanOrEqualTo(0);
        assertThat(rs3).isLessThan(gather1Backward);
        assertThat(e.indexOf("reduce_scatter unit 0")).as("the first unit's last").isLessThan(e.indexOf("reduce_scatter root"));
        assertThat(e.stream().filter(n -> n.startsWith("reduce_scatter")).count()).isEqualTo(BLOCKS + 1);
    }

    @Test
    @Timeout(120)
    void trainsLikeOneProcessAndHoldsSixteenBytesPerParameterOverN() throws Exception {
        int steps = 3, world = 3;
        DeepTinyLm model = new DeepTinyLm(5);
        FlatParameters flat = FlatParameters.of(model);
        SingleProcess single = new SingleProcess(flat, DataParallelOptions.defaults());
        float[] norms = new float[steps];
        for (int s = 0; s < steps; s++) {
            single.zeroGrad();
            single.beginMicroStep(true);
            // one process sees the whole global batch: the mean over world x ROWS rows
            for (int r = 0; r < world; r++) {
                int[][] b = batch(s, r, world);
                Tensor l = model.loss(b[0], b[1]).mul(1f / world);
                l.backward();
            }
            single.finishGradients();
            norms[s] = single.step(1e-2f, 1f);
        }
        Observed o = trainSharded(world, steps);
        for (int s = 0; s < steps; s++) assertThat(o.norms()[s]).as("gradient norm, step %d", s).isCloseTo(norms[s], within(1e-5f * norms[s]));
        for (int i = 0; i < flat.size(); i++) assertThat(o.params()[i]).as("parameter %d", i).isCloseTo(flat.data()[i], within(2e-5f));
        MemoryReport m = o.memory();
        assertThat(m.bytesPerParameter()).as("16 B/param over 3 ranks, plus padding of the shards")
                .isCloseTo(MemoryReport.expectedBytesPerParameter(3, world), within(0.35));
    }

    /** A unit's floats as FSDP lays them out and pads them for {@code world} shards (16-float alignment). */
    private static long paddedUnit(List<Tensor> params, int world) {
        long len = 0;
        for (Tensor t : params) len = (len + t.numel() + 15) / 16 * 16;
        long shard = ((len + world - 1) / world + 15) / 16 * 16;
        return shard * world;
    }

    @Test
    @Timeout(120)
    void gatherAndReduceBuffersStayWithinThePlannedWorkingSet() throws Exception {
        int world = 2;
        DeepTinyLm model = new DeepTinyLm(5);
        long unit = paddedUnit(model.units().getFirst(), world), root = paddedUnit(List.of(model.wte.weight), world);
        MemoryPlan plan = MemoryPlan.predict(3, world, FlatParameters.of(model).parameterCount(), unit, root, 0, 0, 1);
        long pooled = trainSharded(world, 2).memory().stagingBytes();
        // weights of two units and the root gathered in place (N shards each); the gradients of the root and of one
        // or two units (a reduce-scatter still in flight) in buffers of N + 1 shards
        long weights = 4 * (2 * unit + root);
        assertThat(pooled).as("gather and reduce-scatter buffers after two steps")
                .isIn(weights + 4 * (unit + root) * (world + 1) / world, weights + 4 * (2 * unit + root) * (world + 1) / world)
                .isLessThanOrEqualTo(plan.gathered());
    }

    @Test
    @Timeout(120)
    void checkpointShardsCoverEveryParameterOnce() throws Exception {
        DeepTinyLm model = new DeepTinyLm(5);
        long params = FlatParameters.of(model).parameterCount();
        List<List<TensorShard>> perRank = LocalRanks.run(3, (rank, pg) -> {
            DeepTinyLm m = new DeepTinyLm(5);
            FlatParameters flat = FlatParameters.of(m);
            return new FullyShardedDataParallel(flat, m, pg, DataParallelOptions.defaults().withZeroStage(3), null).modelState().shards();
        });
        // per element of every tensor: how many ranks own it (a total alone would pass a gap with an overlap)
        java.util.Map<String, int[]> owners = new java.util.TreeMap<>();
        for (List<TensorShard> shards : perRank)
            for (TensorShard s : shards) {
                assertThat(s.replicated()).isFalse();
                long numel = java.util.Arrays.stream(s.globalShape()).reduce(1, (x, y) -> x * y);
                int[] count = owners.computeIfAbsent(s.name(), n -> new int[(int) numel]);
                for (long i = s.globalOffset(); i < s.globalOffset() + s.length(); i++) count[(int) i]++;
            }
        long elements = 0;
        for (var e : owners.entrySet()) {
            elements += e.getValue().length;
            for (int i = 0; i < e.getValue().length; i++) {
                assertThat(e.getValue()[i]).as("owners of %s[%d]", e.getKey(), i).isEqualTo(1);
            }
        }
        assertThat(elements).as("every parameter's tensor present").isEqualTo(params);
    }

    @Test
    @Timeout(120)
    void parametersOutsideTheirUnitAreUnreadableAndUnshardBringsThemBack() throws Exception {
        List<Float> result = LocalRanks.run(2, (rank, pg) -> {
            DeepTinyLm m = new DeepTinyLm(5);
            FlatParameters flat = FlatParameters.of(m);
            float before = m.downs.get(2).weight.get(1, 3);
            var dp = new FullyShardedDataParallel(flat, m, pg, DataParallelOptions.defaults().withZeroStage(3), null);
            assertThatThrownBy(() -> m.downs.get(2).weight.get(1, 3)).as("resharded: no stale values").isInstanceOf(ArrayIndexOutOfBoundsException.class);
            assertThatThrownBy(flat::data).isInstanceOf(IllegalStateException.class).hasMessageContaining("ZeRO-3");
            dp.unshard();
            assertThat(m.downs.get(2).weight.get(1, 3)).isEqualTo(before);
            return m.loss(batch(0, 0, 1)[0], batch(0, 0, 1)[1]).item(); // runs without hooks now
        });
        assertThat(result.get(0)).isEqualTo(result.get(1));
    }
}
