package dev.jtrain.train;

import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
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
}
