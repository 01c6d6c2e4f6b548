package dev.jtrain.train;

import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.LoadOptions;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.tensor.kernel.Precision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Training with {@code precision = bf16}: matmuls on bf16 operands, fp32 master weights and optimizer state. The
 * checkpoint holds those fp32 masters, so a bf16 run that crashes and resumes ends bitwise as the uninterrupted bf16
 * run; and the run is really bf16 (its parameters differ from the fp32 run's) while learning as well.
 */
@Timeout(120)
class Bf16TrainingTest {
    private static final int STEPS = 10;

    @TempDir
    Path dir;

    private static TrainConfig config(Precision p) {
        return TrainerCheckpointTest.config(STEPS).withPrecision(p);
    }

    private float[] run(Precision p, int crashAt, Path ckptDir, Path resumeFrom, List<Float> losses) {
        Gpt g = new Gpt(TrainerCheckpointTest.MODEL, TrainerCheckpointTest.SEED + (resumeFrom != null ? 7 : 0));
        Trainer t = new Trainer(config(p), g, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        try (Checkpointer c = new Checkpointer(null)) {
            if (resumeFrom != null) t.resume(c, resumeFrom, LoadOptions.latest());
            t.setCheckpointing(c, ckptDir, 2, false, 0);
            t.run(new TrainListener() {
                @Override public void onStep(StepMetrics m) {
                    losses.add(m.loss());
                    if (m.step() == crashAt) throw new IllegalStateException("crashed");
                }
            });
        } catch (IllegalStateException crashed) {
            assertThat(crashed).hasMessage("crashed");
        }
        return t.parameters().data().clone();
    }

    @Test
    void aBf16RunResumesBitwiseAndDiffersFromFp32() {
        List<Float> bf16Losses = new ArrayList<>(), fp32Losses = new ArrayList<>();
        float[] fp32 = run(Precision.FP32, -1, dir.resolve("fp32"), null, fp32Losses);
        float[] reference = run(Precision.BF16, -1, dir.resolve("bf16"), null, bf16Losses);
        assertThat(Arrays.equals(reference, fp32)).as("bf16 changed the arithmetic").isFalse();
        assertThat(bf16Losses.getLast()).as("bf16 learns").isLessThan(bf16Losses.getFirst());
        assertThat((double) Math.abs(bf16Losses.getLast() - fp32Losses.getLast())).as("and about as well as fp32")
                .isLessThan(0.02 * fp32Losses.getLast());

        run(Precision.BF16, 6, dir.resolve("crashed"), null, new ArrayList<>()); // checkpoints 2, 4, 6 steps done, dies in the 7th
        float[] resumed = run(Precision.BF16, -1, dir.resolve("crashed"), dir.resolve("crashed").resolve("step-000006"), new ArrayList<>());
        assertThat(Arrays.equals(resumed, reference)).as("resumed bf16 run ends bitwise as the uninterrupted one").isTrue();
    }
}
