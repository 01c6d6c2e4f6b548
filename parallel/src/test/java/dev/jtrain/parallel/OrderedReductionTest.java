package dev.jtrain.parallel;

import dev.jtrain.comm.ProcessGroupOptions;
import dev.jtrain.comm.algo.Collective;
import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Under {@code GradReduce.ORDERED} a job launched on 4 ranks trains bitwise the same on 2 ranks (each running two
 * ranks' rows as pieces) and on 1, with gradient accumulation (2 micro-batches) and clipping on: the same gradient
 * norms and parameters after every step, not merely close ones. The job's global batch of 8 rows is 4 slices of 2
 * rows, one per rank as launched; a rank of a smaller job runs its slices one after the other. The fast reduction
 * (cost-model pick, pieces accumulated in one buffer) is checked to differ, so the data is order-sensitive.
 */
class OrderedReductionTest {
    static final int VOCAB = 37, DIM = 21, LAUNCHED = 4, ROWS = 2, T = 8, STEPS = 4, ACCUM = 2;

    record Result(float[] gradNorms, float[] params) {}

    static int[][] batch(int step, int micro) {
        Rng rng = new Rng(1000L * step + micro);
        int[] x = new int[LAUNCHED * ROWS * T], y = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            x[i] = rng.nextInt(VOCAB);
            y[i] = (7 * x[i] + 3) % VOCAB;
        }
        return new int[][] {x, y};
    }

    /** One rank of {@code world}: its launched ranks' slices as pieces, in the order the trainer runs them. */
    static Result train(int rank, int world, DataParallel dp, FlatParameters flat, TinyLm model) {
        int pieces = LAUNCHED / world;
        float[] norms = new float[STEPS];
        for (int step = 0; step < STEPS; step++) {
            dp.zeroGrad();
            if (dp.ordered()) {
                for (int piece = 0; piece < pieces; piece++) {
                    if (pieces > 1) dp.beginPiece(piece, pieces);
                    for (int micro = 0; micro < ACCUM; micro++) microStep(dp, model, step, micro, rank * pieces + piece, micro == ACCUM - 1 && piece == pieces - 1, pieces);
                }
            } else {
                for (int micro = 0; micro < ACCUM; micro++)
                    for (int piece = 0; piece < pieces; piece++) microStep(dp, model, step, micro, rank * pieces + piece, micro == ACCUM - 1 && piece == pieces - 1, pieces);
            }
            dp.finishGradients();
            norms[step] = dp.step(1e-2f, EquivalenceTest.CLIP);
            assertThat(norms[step]).as("clipping is active at step %d", step).isGreaterThan(EquivalenceTest.CLIP);
        }
        return new Result(norms, flat.data().clone());
    }

    private static void microStep(DataParallel dp, TinyLm model, int step, int micro, int slice, boolean sync, int pieces) {
        int[][] b = batch(step, micro);
        int[] x = Arrays.copyOfRange(b[0], slice * ROWS * T, (slice + 1) * ROWS * T);
        int[] y = Arrays.copyOfRange(b[1], slice * ROWS * T, (slice + 1) * ROWS * T);
        dp.beginMicroStep(sync);
        Tensor loss = model.loss(x, y, ROWS, T);
        loss.mul(1f / (ACCUM * pieces)).backward();
    }

    /** {@code world} ranks whose groups would pick the ring for every all-reduce (its order depends on the world size). */
    static Result run(int world, GradReduce reduce) throws Exception {
        DataParallelOptions o = DataParallelOptions.defaults().withBuckets(512, 2048).withGradReduce(reduce);
        ProcessGroupOptions ring = ProcessGroupOptions.defaults().withAlgorithm(Collective.ALL_REDUCE, "ring");
        return check(LocalRanks.run(ring, world, (rank, pg) -> {
            TinyLm model = new TinyLm(VOCAB, DIM, 42 + rank);
            FlatParameters flat = FlatParameters.of(model);
            return train(rank, world, DataParallel.create(flat, model, pg, o, null), flat, model);
        }));
    }

    /** 4 ranks on 2 hosts, where the group would pick the hierarchical all-reduce. */
    static Result runOnTwoHosts(GradReduce reduce) throws Exception {
        DataParallelOptions o = DataParallelOptions.defaults().withBuckets(512, 2048).withGradReduce(reduce);
        return check(LocalRanks.runOnHosts(new int[] {0, 0, 1, 1}, (rank, pg) -> {
            TinyLm model = new TinyLm(VOCAB, DIM, 42 + rank);
            FlatParameters flat = FlatParameters.of(model);
            return train(rank, LAUNCHED, DataParallel.create(flat, model, pg, o, null), flat, model);
        }));
    }

    private static Result check(List<Result> rs) {
        for (Result r : rs.subList(1, rs.size())) assertThat(r.params()).containsExactly(rs.get(0).params());
        return rs.get(0);
    }

    @Test
    @Timeout(120)
    void twoRanksAndOneRankStandingForFourTrainBitwiseAsFour() throws Exception {
        Result four = run(4, GradReduce.ORDERED);
        for (int world : new int[] {2, 1}) {
            Result fewer = run(world, GradReduce.ORDERED);
            assertThat(fewer.gradNorms()).as("gradient norms on %d rank(s) against 4", world).containsExactly(four.gradNorms());
            assertThat(fewer.params()).as("parameters on %d rank(s) against 4", world).containsExactly(four.params());
        }
        assertThat(runOnTwoHosts(GradReduce.ORDERED).params()).as("4 ranks on 2 hosts against 4 on one").containsExactly(four.params());
        assertThat(run(2, GradReduce.FAST).params()).as("the fast reduction on 2 ranks: another order, other bits")
                .isNotEqualTo(run(4, GradReduce.FAST).params());
    }

    @Test
    @Timeout(60)
    void orderedIsRefusedWhereItCouldNotHoldItsPromise() {
        DataParallelOptions o = DataParallelOptions.defaults().withGradReduce(GradReduce.ORDERED);
        assertThatThrownBy(() -> o.withZeroStage(1).validate()).hasMessageContaining("needs DDP (--zero 0)");
        assertThatThrownBy(() -> o.withGradWire(GradWire.BF16).validate()).hasMessageContaining("--grad-wire fp32");
    }
}
