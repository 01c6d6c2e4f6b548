package dev.jtrain.train;

import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The FLOP count behind MFU (PaLM appendix B as llm.c applies it: 6 FLOPs per parameter per token for the matmuls
 * of forward and backward, plus 6·L·C·T for causal attention), counted here from the architecture rather than
 * from the model's own parameter total, and the trainer's per-step MFU built from it.
 */
class MfuTest {
    /** Matmul-bearing parameters of a GPT-2 block stack: per block 12C² + 13C, plus the final layer norm and wte. */
    static long matmulParameters(int layers, int c, int paddedVocab) {
        long perBlock = 2L * c + (3L * c * c + 3L * c) + ((long) c * c + c) + 2L * c + (4L * c * c + 4L * c) + (4L * c * c + c);
        return layers * perBlock + 2L * c + (long) paddedVocab * c; // lm_head shares wte's weights
    }

    @Test
    void gpt2SmallCostsSixFlopsPerParameterPlusCausalAttentionPerToken() {
        GptConfig gpt2 = new GptConfig(12, 12, 768, 1024, 50257, 0f, true);
        Gpt model = new Gpt(gpt2, 1);
        long n = matmulParameters(12, 768, gpt2.paddedVocabSize());
        // nanoGPT's "123.65M" (no position embeddings, vocabulary 50257) plus the 47 padding rows of wte
        assertThat(n).isEqualTo(123_653_376L + 47L * 768);
        double want = 6.0 * n + 6.0 * 12 * 768 * 1024;
        assertThat(model.flopsPerToken(1024)).isEqualTo(want);
        assertThat(model.flopsPerToken(256)).as("attention term scales with T").isEqualTo(6.0 * n + 6.0 * 12 * 768 * 256);
    }

    @Test
    void reportedMfuIsModelFlopsPerSecondOverPeak() {
        List<StepMetrics> steps = new ArrayList<>();
        Gpt g = new Gpt(TrainerCheckpointTest.MODEL, TrainerCheckpointTest.SEED);
        TrainConfig config = TrainerCheckpointTest.config(3);
        new Trainer(config, g, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch).run(new TrainListener() {
            @Override public void onStep(StepMetrics m) { steps.add(m); }
        });
        int t = TrainerCheckpointTest.MODEL.blockSize();
        assertThat(steps).hasSize(3);
        for (StepMetrics m : steps) {
            double flopsPerSecond = g.flopsPerToken(t) * m.tokensPerSecond();
            assertThat(m.mfu()).as("step %d", m.step()).isCloseTo(flopsPerSecond / config.peakFlops(), within(1e-9 * m.mfu()));
            assertThat(m.tokensPerSecond()).isCloseTo(config.tokensPerStep() / (m.stepMs() / 1e3), within(1e-6 * m.tokensPerSecond()));
        }
    }
}
