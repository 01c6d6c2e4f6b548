package dev.jtrain.train;

import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.parallel.DataParallel;
import dev.jtrain.parallel.DataParallelOptions;
import dev.jtrain.parallel.GradReduce;
import dev.jtrain.parallel.MemoryReport;
import dev.jtrain.parallel.SingleProcess;
import dev.jtrain.tensor.state.Stateful;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Running each micro-batch as accumulated pieces (what a job that lost nodes does to keep its per-rank batch) gives
 * the same losses, gradient norms and parameters as running it whole, up to float rounding (without dropout: with it,
 * the pieces draw their masks in another order).
 */
class MicroBatchSplitTest {
    private static List<StepMetrics> run(int pieces, float[][] params) {
        GptConfig noDropout = new GptConfig(2, 2, 16, 8, 40, 0f, true);
        TrainConfig c = TrainerCheckpointTest.config(4);
        TrainConfig config = new TrainConfig(noDropout, c.batchSize(), c.gradAccum(), c.maxSteps(), c.maxSeconds(), c.learningRate(),
                c.minLearningRate(), c.warmupSteps(), c.weightDecay(), c.gradClip(), c.evalInterval(), c.evalBatches(), c.seed(),
                false, c.peakFlops(), c.decaySteps());
        Trainer t = new Trainer(config, new Gpt(noDropout, TrainerCheckpointTest.SEED),
                TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        t.setMicroBatchSplit(pieces);
        List<StepMetrics> steps = new ArrayList<>();
        t.run(new TrainListener() {
            @Override public void onStep(StepMetrics m) { steps.add(m); }
        });
        params[0] = t.parameters().data().clone();
        return steps;
    }

    @Test
    void piecesGiveTheGradientsOfTheWholeMicroBatch() {
        float[][] whole = new float[1][], split = new float[1][], four = new float[1][];
        List<StepMetrics> a = run(1, whole), b = run(2, split), c = run(4, four);
        for (int i = 0; i < a.size(); i++) {
            assertThat(b.get(i).loss()).isCloseTo(a.get(i).loss(), within(1e-5f));
            assertThat(b.get(i).gradNorm()).as("a mis-scaled piece would show here (AdamW hides it)")
                    .isCloseTo(a.get(i).gradNorm(), within(a.get(i).gradNorm() * 1e-4f));
            assertThat(c.get(i).gradNorm()).isCloseTo(a.get(i).gradNorm(), within(a.get(i).gradNorm() * 1e-4f));
        }
        for (int j = 0; j < whole[0].length; j++) {
            assertThat(split[0][j]).isCloseTo(whole[0][j], within(1e-5f));
            assertThat(four[0][j]).isCloseTo(whole[0][j], within(1e-5f));
        }
    }

    /**
     * Under an ordered reduction each piece stands for a rank as launched, whose gradient sums its micro-batches
     * alone: the trainer runs every micro-batch of a piece before the next piece begins, tells the strategy where each
     * piece begins, and communicates (sync) only on the last micro-batch of the last piece.
     */
    @Test
    void underAnOrderedReductionEachPieceRunsAllItsMicroBatchesBeforeTheNextBegins() {
        TrainConfig c = TrainerCheckpointTest.config(2);
        TrainConfig twoMicro = new TrainConfig(c.model(), c.batchSize(), 2, c.maxSteps(), c.maxSeconds(), c.learningRate(),
                c.minLearningRate(), c.warmupSteps(), c.weightDecay(), c.gradClip(), c.evalInterval(), c.evalBatches(), c.seed(),
                false, c.peakFlops(), c.decaySteps());
        List<String> calls = new ArrayList<>();
        Trainer t = new Trainer(twoMicro, new Gpt(c.model(), TrainerCheckpointTest.SEED), TrainerCheckpointTest::batch,
                TrainerCheckpointTest::batch, p -> new Recording(new SingleProcess(p, DataParallelOptions.defaults()
                .withGradReduce(GradReduce.ORDERED)), calls));
        t.setMicroBatchSplit(2);
        t.run(new TrainListener() { });
        List<String> step = List.of("zeroGrad", "piece 0/2", "micro false", "micro false", "piece 1/2", "micro false", "micro true", "finish");
        List<String> expected = new ArrayList<>(step);
        expected.addAll(step);
        assertThat(calls).isEqualTo(expected);
    }

    /** A strategy that records the trainer's calls and passes them on. */
    private record Recording(DataParallel inner, List<String> calls) implements DataParallel {
        @Override public int rank() { return inner.rank(); }
        @Override public int worldSize() { return inner.worldSize(); }
        @Override public void zeroGrad() { calls.add("zeroGrad"); inner.zeroGrad(); }
        @Override public void beginMicroStep(boolean sync) { calls.add("micro " + sync); inner.beginMicroStep(sync); }
        @Override public boolean ordered() { return inner.ordered(); }
        @Override public void beginPiece(int piece, int of) { calls.add("piece " + piece + "/" + of); inner.beginPiece(piece, of); }
        @Override public long finishGradients() { calls.add("finish"); return inner.finishGradients(); }
        @Override public float step(float lr, float maxNorm) { return inner.step(lr, maxNorm); }
        @Override public float average(float value) { return inner.average(value); }
        @Override public long lastStepCommNanos() { return inner.lastStepCommNanos(); }
        @Override public MemoryReport memory() { return inner.memory(); }
        @Override public int stepCount() { return inner.stepCount(); }
        @Override public Stateful modelState() { return inner.modelState(); }
        @Override public Stateful optimizerState() { return inner.optimizerState(); }
    }
}
