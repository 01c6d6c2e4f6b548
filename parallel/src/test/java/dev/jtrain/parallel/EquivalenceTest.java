package dev.jtrain.parallel;

import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.AdamW;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import dev.jtrain.autograd.Autocast;
import dev.jtrain.tensor.kernel.Precision;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * N ranks on the same global batch must train like 1 rank: same losses, gradient norms and parameters after several
 * steps, for DDP and ZeRO stages 1, 2 and 3, with gradient accumulation, clipping and weight decay on. The global batch of 12 rows is
 * split into 12/N contiguous rows per rank. Tolerance: fp32 sums in a different order (mean of per-rank means vs one
 * mean) differ by ~1e-7 relative per step; after 4 AdamW steps parameters agree to 2e-5 absolute and losses to 1e-5.
 */
class EquivalenceTest {
    static final int VOCAB = 37, DIM = 21;
    static final int GLOBAL_BATCH = 12, T = 8, STEPS = 4, ACCUM = 2;
    /** Below every step's gradient norm (~0.33 for TinyLm on these batches), so that each step is clipped. */
    static final float CLIP = 0.1f;

    /** @param gradNorms the global gradient norm before clipping, per step: catches a uniformly mis-scaled gradient */
    record Result(float[] losses, float[] gradNorms, float[] params) {}

    /** World sizes 5 and 7 split a global batch of 35 rows (12 does not divide). */
    static final int GLOBAL_BATCH_5_7 = 35;

    /**
     * Every run's options: AdamW with an eps near the gradients' size, so that the update depends on their scale.
     * With the usual 1e-8, m/√v barely changes when the gradients are scaled, so a strategy that skipped clipping (or
     * clipped twice) still matched one rank within the tolerance.
     */
    static DataParallelOptions options() {
        return DataParallelOptions.defaults().withOptimizer(new AdamW(0.9f, 0.95f, 0.05f, 0.1f));
    }

    static int[][] batch(int step, int micro, int globalBatch) {
        Rng rng = new Rng(1000L * step + micro);
        int[] x = new int[globalBatch * T], y = new int[globalBatch * T];
        for (int i = 0; i < x.length; i++) {
            x[i] = rng.nextInt(VOCAB);
            y[i] = (7 * x[i] + 3) % VOCAB; // learnable, so the loss must fall
        }
        return new int[][]{x, y};
    }

    static Result train(int rank, int world, DataParallel dp, FlatParameters flat, TinyLm model) {
        return train(rank, world, dp, flat, model, Precision.FP32);
    }

    static Result train(int rank, int world, DataParallel dp, FlatParameters flat, TinyLm model, Precision precision) {
        return train(rank, world, dp, flat, model, precision, Branch.TAKEN);
    }

    /** Whether TinyLm's MLP branch (its units' parameters) is in the loss. */
    enum Branch {
        TAKEN, LEFT_OUT_OF_LAST_MICRO_STEP, NEVER_TAKEN;

        boolean skipped(int micro) {
            return this == NEVER_TAKEN || this == LEFT_OUT_OF_LAST_MICRO_STEP && micro == ACCUM - 1;
        }
    }

    static Result train(int rank, int world, DataParallel dp, FlatParameters flat, TinyLm model, Precision precision, Branch branch) {
        return train(rank, world, dp, flat, model, precision, branch, GLOBAL_BATCH);
    }

    static Result train(int rank, int world, DataParallel dp, FlatParameters flat, TinyLm model, Precision precision, Branch branch,
                        int globalBatch) {
        assertThat(dp.worldSize()).as("the strategy's world size is the job's").isEqualTo(world);
        assertThat(dp.rank()).as("the strategy's rank is the job's").isEqualTo(rank);
        float[] losses = new float[STEPS], norms = new float[STEPS];
        int rows = globalBatch / world;
        for (int step = 0; step < STEPS; step++) {
            dp.zeroGrad();
            float sum = 0;
            for (int micro = 0; micro < ACCUM; micro++) {
                int[][] b = batch(step, micro, globalBatch);
                int[] x = java.util.Arrays.copyOfRange(b[0], rank * rows * T, (rank + 1) * rows * T);
                int[] y = java.util.Arrays.copyOfRange(b[1], rank * rows * T, (rank + 1) * rows * T);
                dp.beginMicroStep(micro == ACCUM - 1);
                model.skipProj = branch.skipped(micro);
                try (var cast = Autocast.with(precision)) {
                    Tensor loss = model.loss(x, y, rows, T);
                    sum += loss.item();
                    loss.mul(1f / ACCUM).backward();
                }
            }
            dp.finishGradients();
            norms[step] = dp.step(1e-2f, CLIP);
            assertThat(norms[step]).as("clipping is active at step %d (the norm is above the clip)", step).isGreaterThan(CLIP);
            losses[step] = dp.average(sum / ACCUM);
        }
        return new Result(losses, norms, dp instanceof FullyShardedDataParallel f ? f.gatherParameters() : flat.data().clone());
    }

    static Result run(int world, int stage) throws Exception {
        return run(world, stage, GradWire.FP32);
    }

    static Result run(int world, int stage, GradWire wire) throws Exception {
        return run(world, stage, wire, Precision.FP32);
    }

    static Result run(int world, int stage, GradWire wire, Precision precision) throws Exception {
        return run(world, stage, wire, precision, GLOBAL_BATCH);
    }

    static Result run(int world, int stage, GradWire wire, Precision precision, int globalBatch) throws Exception {
        DataParallelOptions o = options().withZeroStage(stage).withBuckets(512, 2048).withGradWire(wire);
        List<Result> rs = LocalRanks.run(world, (rank, pg) -> {
            TinyLm model = new TinyLm(VOCAB, DIM, 42 + rank); // different init per rank: DDP/ZeRO must broadcast rank 0's
            FlatParameters flat = FlatParameters.of(model);
            DataParallel dp = DataParallel.create(flat, model, pg, o, null);
            return train(rank, world, dp, flat, model, precision, Branch.TAKEN, globalBatch);
        });
        for (Result r : rs.subList(1, rs.size())) assertThat(r.params()).containsExactly(rs.get(0).params());
        return rs.get(0);
    }

    /**
     * As {@link #run}, ranks declared on hosts ({@code hostOf}) and sharded across {@code scope}; the bytes sent off
     * every host while training (after the group's start-up probes and the first parameter broadcast) are added to
     * {@code trainingOffHost} (may be null).
     */
    static Result runOnHosts(int[] hostOf, int stage, ShardScope scope, AtomicLong trainingOffHost) throws Exception {
        return runOnHosts(hostOf, stage, scope, trainingOffHost, Branch.TAKEN);
    }

    static Result runOnHosts(int[] hostOf, int stage, ShardScope scope, AtomicLong trainingOffHost, Branch branch) throws Exception {
        return runOnHosts(hostOf, stage, scope, trainingOffHost, branch, Precision.FP32, GradWire.FP32);
    }

    static Result runOnHosts(int[] hostOf, int stage, ShardScope scope, AtomicLong trainingOffHost, Branch branch,
                             Precision precision, GradWire wire) throws Exception {
        DataParallelOptions o = options().withZeroStage(stage).withBuckets(512, 2048).withShardWithin(scope)
                .withGradWire(wire);
        int world = hostOf.length;
        AtomicLongArray offHost = new AtomicLongArray(Arrays.stream(hostOf).max().orElseThrow() + 1);
        List<Result> rs = LocalRanks.runOnHosts(hostOf, offHost, (rank, pg) -> {
            TinyLm model = new TinyLm(VOCAB, DIM, 42 + rank);
            FlatParameters flat = FlatParameters.of(model);
            DataParallel dp = DataParallel.create(flat, model, pg, o, null);
            pg.barrier(); // every send before this is counted by now (a send is counted when it is issued)
            long before = sum(offHost);
            Result r = train(rank, world, dp, flat, model, precision, branch);
            pg.barrier();
            if (rank == 0 && trainingOffHost != null) trainingOffHost.addAndGet(sum(offHost) - before);
            return r;
        });
        for (Result r : rs.subList(1, rs.size())) assertThat(r.params()).containsExactly(rs.get(0).params());
        return rs.get(0);
    }

    /**
     * A branch taken in the first micro-step and not in the last: under HSDP ZeRO-3 its units reduced only within
     * their hosts, and the step must still average them across hosts (else each host steps with its own gradient and
     * the replicas drift apart), like one rank with the same branches.
     */
    @ParameterizedTest(name = "ZeRO stage {0}")
    @CsvSource({"3", "2"})
    @Timeout(180)
    void hybridShardingAveragesUnitsLeftOutOfTheLastMicroStep(int stage) throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model, Precision.FP32, Branch.LEFT_OUT_OF_LAST_MICRO_STEP);
        Result multi = runOnHosts(new int[]{0, 0, 1, 1}, stage, ShardScope.HOST, null, Branch.LEFT_OUT_OF_LAST_MICRO_STEP); // checks every rank agrees
        for (int s = 0; s < STEPS; s++)
            assertThat(multi.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(1e-5f * single.gradNorms()[s]));
        for (int i = 0; i < single.params().length; i++)
            assertThat(multi.params()[i]).as("parameter %d", i).isCloseTo(single.params()[i], within(2e-5f));
    }

    /**
     * The same branch on 3 ranks of one host, every stage. Left out of the last (synchronising) micro-step, the MLP's
     * parameters get no gradient there, so their buckets are never ready from a hook and go out from
     * {@code finishGradients} (BucketLaunches.launchRest), still averaged, in order, on every rank. Never taken, they
     * get no gradient at all (an unused parameter, which PyTorch's DDP needs {@code find_unused_parameters} for): their
     * zero gradients are still reduced and stepped (AdamW's weight decay still shrinks them), like one rank's.
     */
    @ParameterizedTest(name = "{0}, ZeRO stage {1}")
    @CsvSource({"LEFT_OUT_OF_LAST_MICRO_STEP,0", "LEFT_OUT_OF_LAST_MICRO_STEP,1", "LEFT_OUT_OF_LAST_MICRO_STEP,2",
            "LEFT_OUT_OF_LAST_MICRO_STEP,3", "NEVER_TAKEN,0", "NEVER_TAKEN,1", "NEVER_TAKEN,2", "NEVER_TAKEN,3"})
    @Timeout(180)
    void parametersWithoutAGradientAreStillAveragedAndSteppedOnThreeRanks(Branch branch, int stage) throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        float[] before = flat.data().clone();
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model, Precision.FP32, branch);
        Result multi = runOnHosts(new int[]{0, 0, 0}, stage, ShardScope.WORLD, null, branch); // checks every rank agrees
        for (int s = 0; s < STEPS; s++)
            assertThat(multi.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(1e-5f * single.gradNorms()[s]));
        for (int i = 0; i < single.params().length; i++)
            assertThat(multi.params()[i]).as("parameter %d", i).isCloseTo(single.params()[i], within(2e-5f));
        if (branch == Branch.NEVER_TAKEN) // not vacuous: no gradient reached the branch, yet its matrices were stepped
            for (FlatParameters.Slot slot : flat.slots()) {
                if (!slot.name().startsWith("fc.") && !slot.name().startsWith("proj.") && !slot.name().startsWith("ln.")) continue;
                float[] was = Arrays.copyOfRange(before, slot.offset(), slot.offset() + slot.numel());
                float[] now = Arrays.copyOfRange(multi.params(), slot.offset(), slot.offset() + slot.numel());
                if (slot.name().endsWith("weight") && !slot.name().startsWith("ln."))
                    assertThat(now).as("%s: shrunk by weight decay", slot.name()).isNotEqualTo(was);
                else
                    assertThat(now).as("%s: no gradient and no decay", slot.name()).containsExactly(was);
            }
    }

    /**
     * HSDP ZeRO-3 on 2 hosts × 2 in bf16 compute trains like one bf16 rank (4 ranks: the loss gradient's 1/rows scale
     * rounds as one rank's does, so fp32 tolerances hold); with bf16 gradients on the wire, both the host reduce-scatter
     * and the cross-host all-reduce round, within bf16's error, and every rank still ends with the same bits.
     */
    @org.junit.jupiter.api.Test
    @Timeout(180)
    void hybridShardingInBf16TrainsLikeOneBf16Rank() throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model, Precision.BF16);
        int[] hosts = {0, 0, 1, 1};
        Result compute = runOnHosts(hosts, 3, ShardScope.HOST, null, Branch.TAKEN, Precision.BF16, GradWire.FP32);
        Result wire = runOnHosts(hosts, 3, ShardScope.HOST, null, Branch.TAKEN, Precision.BF16, GradWire.BF16);
        for (int s = 0; s < STEPS; s++) {
            assertThat(compute.losses()[s]).as("loss at step %d", s).isCloseTo(single.losses()[s], within(1e-5f));
            assertThat(compute.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(1e-5f * single.gradNorms()[s]));
            assertThat(wire.gradNorms()[s]).as("bf16 wire: gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(0.01f * single.gradNorms()[s]));
        }
        for (int i = 0; i < single.params().length; i++)
            assertThat(compute.params()[i]).as("parameter %d", i).isCloseTo(single.params()[i], within(2e-5f));
        assertThat(wire.params()).isNotEqualTo(compute.params());
    }

    static long sum(AtomicLongArray a) {
        long n = 0;
        for (int i = 0; i < a.length(); i++) n += a.get(i);
        return n;
    }

    /**
     * Hybrid sharding (HSDP, {@code --shard-within host}): shards within each host, replicas across hosts. 2 hosts × 2
     * ranks at every stage, host-major and interleaved rank placement, 2 × 3, and 2 × 1 (a host's shard is the whole
     * model): the same tolerances as {@link #nRanksTrainLikeOneRank}, and every rank (both hosts' replicas) ends with
     * the same parameters.
     */
    @ParameterizedTest(name = "hosts of ranks {0}, ZeRO stage {1}")
    @CsvSource({"0-0-1-1,1", "0-0-1-1,2", "0-0-1-1,3", "0-1-0-1,3", "0-0-0-1-1-1,3", "0-0-0-1-1-1,2", "0-1,3"})
    @Timeout(180)
    void hybridShardingTrainsLikeOneRank(String layout, int stage) throws Exception {
        int[] hostOf = Arrays.stream(layout.split("-")).mapToInt(Integer::parseInt).toArray();
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model);
        Result multi = runOnHosts(hostOf, stage, ShardScope.HOST, null);
        for (int s = 0; s < STEPS; s++) {
            assertThat(multi.losses()[s]).as("loss at step %d", s).isCloseTo(single.losses()[s], within(1e-5f));
            assertThat(multi.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(1e-5f * single.gradNorms()[s]));
        }
        for (int i = 0; i < single.params().length; i++)
            assertThat(multi.params()[i]).as("parameter %d", i).isCloseTo(single.params()[i], within(2e-5f));
    }

    /**
     * What crosses the hosts: ZeRO-3 across 2 hosts × 2 gathers every unit twice per micro-step and reduce-scatters it
     * once, each moving about half the unit across the link (hierarchically: 1.5·Ψ per host and micro-step, 3·Ψ per
     * step of 2 micro-steps); HSDP sends only one all-reduce of each host-reduced shard per optimizer step (Ψ per
     * host). Same result, under half the off-host bytes: a hybrid strategy that gathered across hosts, or all-reduced
     * every micro-step (2·Ψ), would not be.
     */
    @org.junit.jupiter.api.Test
    @Timeout(180)
    void hybridShardingSendsFarFewerBytesAcrossHostsThanZero3() throws Exception {
        int[] hostOf = {0, 0, 1, 1};
        AtomicLong flatBytes = new AtomicLong(), hybridBytes = new AtomicLong();
        Result flat = runOnHosts(hostOf, 3, ShardScope.WORLD, flatBytes);
        Result hybrid = runOnHosts(hostOf, 3, ShardScope.HOST, hybridBytes);
        for (int i = 0; i < flat.params().length; i++)
            assertThat(hybrid.params()[i]).as("parameter %d", i).isCloseTo(flat.params()[i], within(2e-5f));
        long f = flatBytes.get(), h = hybridBytes.get();
        assertThat(h).as("HSDP off-host bytes (ZeRO-3: %d)", f).isPositive().isLessThan(f / 2);
    }

    @ParameterizedTest(name = "world {0}, ZeRO stage {1}")
    @CsvSource({"2,0", "3,0", "4,0", "2,1", "3,1", "4,1", "2,2", "3,2", "4,2", "2,3", "3,3", "4,3"})
    @Timeout(180)
    void nRanksTrainLikeOneRank(int world, int stage) throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model);
        Result multi = run(world, stage);
        assertTrainsLikeOneRank(multi, single);
    }

    /** fp32 sums in another order: losses within 1e-5, gradient norms 1e-5 relative, parameters 2e-5; and it learns. */
    static void assertTrainsLikeOneRank(Result multi, Result single) {
        for (int s = 0; s < STEPS; s++) {
            assertThat(multi.losses()[s]).as("loss at step %d", s).isCloseTo(single.losses()[s], within(1e-5f));
            assertThat(multi.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(1e-5f * single.gradNorms()[s]));
        }
        for (int i = 0; i < single.params().length; i++)
            assertThat(multi.params()[i]).as("parameter %d", i).isCloseTo(single.params()[i], within(2e-5f));
        assertThat(multi.losses()[STEPS - 1]).isLessThan(multi.losses()[0]);
    }

    /**
     * World sizes 5 and 7 (odd, prime: no shard, bucket or ring divides evenly), DDP and each ZeRO stage, on a global
     * batch of 35 rows: like one rank, to the tolerances of {@link #nRanksTrainLikeOneRank}.
     */
    @ParameterizedTest(name = "world {0}, ZeRO stage {1}")
    @CsvSource({"5,0", "7,0", "5,1", "7,2", "5,3", "7,3"})
    @Timeout(180)
    void fiveAndSevenRanksTrainLikeOneRank(int world, int stage) throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model, Precision.FP32, Branch.TAKEN,
                GLOBAL_BATCH_5_7);
        Result multi = run(world, stage, GradWire.FP32, Precision.FP32, GLOBAL_BATCH_5_7);
        assertTrainsLikeOneRank(multi, single);
    }

    /**
     * {@code --grad-wire bf16}: gradients travel (and are summed hop by hop) as bf16, so they carry bf16's relative
     * error of 2^-9 per rounding, a few roundings deep: the gradient norm stays within 1% of one fp32 rank's, losses
     * within 1e-3, every rank holds the same parameters bit for bit, and the result is not the fp32 one (the option
     * really changes the wire).
     */
    @ParameterizedTest(name = "world {0}, ZeRO stage {1}")
    @CsvSource({"2,0", "3,0", "3,2"})
    @Timeout(180)
    void bf16GradientsOnTheWireTrainLikeOneRankWithinBf16Error(int world, int stage) throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model);
        Result bf16 = run(world, stage, GradWire.BF16); // run() checks that every rank ends with the same bits
        for (int s = 0; s < STEPS; s++) {
            assertThat(bf16.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(0.01f * single.gradNorms()[s]));
            assertThat(bf16.losses()[s]).as("loss at step %d", s).isCloseTo(single.losses()[s], within(1e-3f));
        }
        assertThat(bf16.params()).isNotEqualTo(run(world, stage, GradWire.FP32).params());
        assertThat(bf16.losses()[STEPS - 1]).isLessThan(bf16.losses()[0]);
    }

    /**
     * bf16 compute ({@link Autocast#bf16()}): every rank rounds the same weights, and a row's forward result does not
     * depend on which rows share its product. What differs from one bf16 rank is the loss gradient each rank rounds:
     * it is scaled by 1 / (its rows), and a scale that is not a power of two (3 ranks: 1/32 against 1/96) rounds to
     * other bf16 values. So with 2 or 4 ranks only fp32 orders of summation differ (the weight gradients' sums, and
     * under ZeRO the clipping norm's, summed from shards), but through bf16: a master weight a few fp32 ulps off can
     * round to the neighbouring bf16 value (2^-8 relative) in the next forward. With 4 ranks under ZeRO on an AVX2 CPU
     * (the fp32 fallback's sums) that moved losses by 1.2e-5 and single parameters by 6.6e-5 by step 4, where DDP stayed
     * within 2.4e-7; so powers of two get losses and gradient norms within 5e-5, parameters within 5e-4 and 5e-6 on
     * average. With 3 ranks, bf16's: gradient norm within 2^-8 relative, losses within 1e-3, and parameters on average
     * within 1e-4. Single parameters may differ by more: where a gradient is near zero, a rounding's worth of
     * difference can turn AdamW's normalised update m/sqrt(v) around, so the bound per parameter is what AdamW can
     * move it in 4 steps (4 x lr). The result is not the fp32 one (bf16 was used).
     */
    @ParameterizedTest(name = "world {0}, ZeRO stage {1}")
    @CsvSource({"2,0", "3,0", "2,1", "3,2", "4,2", "2,3", "3,3"})
    @Timeout(180)
    void bf16ComputeNRanksTrainLikeOneBf16Rank(int world, int stage) throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        Result single = train(0, 1, new SingleProcess(flat, options()), flat, model, Precision.BF16);
        Result multi = run(world, stage, GradWire.FP32, Precision.BF16);
        boolean sameRounding = Integer.bitCount(world) == 1;
        float lossTol = sameRounding ? 5e-5f : 1e-3f, normTol = sameRounding ? 5e-5f : 0x1p-8f, paramTol = sameRounding ? 5e-4f : STEPS * 1e-2f;
        for (int s = 0; s < STEPS; s++) {
            assertThat(multi.losses()[s]).as("loss at step %d", s).isCloseTo(single.losses()[s], within(lossTol));
            assertThat(multi.gradNorms()[s]).as("gradient norm at step %d", s).isCloseTo(single.gradNorms()[s], within(normTol * single.gradNorms()[s]));
        }
        double meanDiff = 0;
        for (int i = 0; i < single.params().length; i++) {
            assertThat(multi.params()[i]).as("parameter %d", i).isCloseTo(single.params()[i], within(paramTol));
            meanDiff += Math.abs(multi.params()[i] - single.params()[i]) / single.params().length;
        }
        assertThat(meanDiff).as("mean parameter difference").isLessThan(sameRounding ? 5e-6 : 1e-4);
        assertThat(multi.params()).isNotEqualTo(run(world, stage, GradWire.FP32, Precision.FP32).params());
        assertThat(multi.losses()[STEPS - 1]).isLessThan(multi.losses()[0]);
    }

    /**
     * The checkpoint view of ZeRO's optimizer state: across 3 ranks the shards of every m and v tile the tensor exactly
     * once and hold the same values as the one-process optimizer after the same training (what resharding relies on).
     */
    @org.junit.jupiter.api.Test
    @Timeout(120)
    void zeroOptimizerShardsTileTheSingleProcessState() throws Exception {
        TinyLm model = new TinyLm(VOCAB, DIM, 42);
        FlatParameters flat = FlatParameters.of(model);
        SingleProcess sp = new SingleProcess(flat, options());
        train(0, 1, sp, flat, model);
        java.util.Map<String, float[]> full = new java.util.HashMap<>();
        for (var t : sp.optimizerState().shards())
            full.put(t.name(), java.util.Arrays.copyOfRange(t.data(), t.dataOffset(), t.dataOffset() + t.length()));
        DataParallelOptions o = options().withZeroStage(2).withBuckets(512, 2048);
        List<List<String>> covered = LocalRanks.run(3, (rank, pg) -> {
            TinyLm m = new TinyLm(VOCAB, DIM, 42);
            FlatParameters f = FlatParameters.of(m);
            ZeroOptimizer z = new ZeroOptimizer(f, pg, o, null);
            train(rank, 3, z, f, m);
            assertThat(z.optimizerState().metadata()).containsEntry("optimizer.step", Integer.toString(STEPS));
            List<String> mine = new java.util.ArrayList<>();
            for (var t : z.optimizerState().shards()) {
                float[] ref = full.get(t.name());
                assertThat(ref).as(t.name()).isNotNull();
                for (int i = 0; i < t.length(); i++)
                    assertThat(t.data()[t.dataOffset() + i]).as("%s[%d]", t.name(), t.globalOffset() + i)
                            .isCloseTo(ref[(int) t.globalOffset() + i], within(1e-5f));
                mine.add(t.name() + "\t" + t.length());
            }
            return mine;
        });
        java.util.Map<String, Long> elements = new java.util.HashMap<>();
        for (List<String> r : covered)
            for (String c : r) elements.merge(c.split("\t")[0], Long.parseLong(c.split("\t")[1]), Long::sum);
        for (var e : full.entrySet()) assertThat(elements.get(e.getKey())).as(e.getKey()).isEqualTo((long) e.getValue().length);
    }
}
