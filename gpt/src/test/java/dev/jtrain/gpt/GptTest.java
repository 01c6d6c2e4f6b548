package dev.jtrain.gpt;

import dev.jtrain.autograd.Autocast;
import dev.jtrain.autograd.SavedMemory;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.AdamW;
import dev.jtrain.optim.FlatOptimizer;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class GptTest {
    private static final GptConfig TINY = new GptConfig(2, 2, 16, 8, 50, 0f, true);

    private static int[] randomIds(Rng rng, int n, int vocab) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) ids[i] = rng.nextInt(vocab);
        return ids;
    }

    @Test
    void parametersHaveNanoGptNamesAndVocabIsPadded() {
        Gpt m = new Gpt(TINY, 1);
        assertThat(TINY.paddedVocabSize()).isEqualTo(64);
        assertThat(m.namedParameters().keySet()).startsWith("transformer.wte.weight", "transformer.wpe.weight",
                "transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.weight");
        assertThat(m.namedParameters()).containsKey("transformer.h.1.mlp.c_proj.bias").containsKey("transformer.ln_f.weight")
                .doesNotContainKey("lm_head.weight");
        assertThat(m.namedParameters().get("transformer.h.0.attn.c_attn.weight").shape()).containsExactly(48, 16);
    }

    /** Whole-model backward against central differences on sampled parameter entries. */
    @Test
    void wholeModelGradientsMatchFiniteDifferences() {
        Gpt m = new Gpt(TINY, 2);
        Rng rng = new Rng(3);
        int[] x = randomIds(rng, 2 * 8, 50), y = randomIds(rng, 2 * 8, 50);
        m.loss(x, y, 2, 8).backward();
        for (String name : List.of("transformer.wte.weight", "transformer.h.0.attn.c_attn.weight", "transformer.h.1.mlp.c_fc.bias",
                "transformer.h.0.ln_1.weight", "transformer.ln_f.bias", "transformer.wpe.weight")) {
            Tensor p = m.namedParameters().get(name);
            float[] g = p.grad().toArray();
            for (int j = 0; j < p.numel(); j += Math.max(1, p.numel() / 7)) {
                int idx = p.offset() + j;
                float orig = p.data()[idx];
                float h = 1e-2f;
                p.data()[idx] = orig + h;
                double lp = m.loss(x, y, 2, 8).item();
                p.data()[idx] = orig - h;
                double lm = m.loss(x, y, 2, 8).item();
                p.data()[idx] = orig;
                double num = (lp - lm) / (2 * h);
                assertThat((double) g[j]).as("%s[%d]", name, j).isCloseTo(num, within(3e-3 + 3e-2 * Math.abs(num)));
            }
        }
    }

    @Test
    void activationCheckpointingGivesIdenticalGradientsWithLessSavedMemory() {
        GptConfig cfg = new GptConfig(3, 2, 32, 16, 64, 0.1f, true);
        Rng rng = new Rng(5);
        int[] x = randomIds(rng, 4 * 16, 64), y = randomIds(rng, 4 * 16, 64);
        List<float[]> grads = new ArrayList<>();
        long[] peak = new long[2];
        float[] losses = new float[2];
        for (int run = 0; run < 2; run++) {
            Gpt m = new Gpt(cfg, 9);
            FlatParameters flat = FlatParameters.of(m);
            m.setActivationCheckpointing(run == 1);
            SavedMemory.resetPeak();
            long base = SavedMemory.liveBytes();
            Tensor loss = m.loss(x, y, 4, 16);
            peak[run] = SavedMemory.peakBytes() - base;
            losses[run] = loss.item();
            loss.backward();
            grads.add(flat.grad().clone());
        }
        assertThat(losses[1]).isEqualTo(losses[0]);
        assertThat(grads.get(1)).containsExactly(grads.get(0));
        assertThat(peak[1]).isLessThan(peak[0] / 2);
    }

    @Test
    void overfitsOneBatch() {
        Gpt m = new Gpt(TINY, 4);
        FlatParameters flat = FlatParameters.of(m);
        FlatOptimizer opt = new FlatOptimizer(flat, new AdamW(0.9f, 0.95f, 1e-8f, 0f));
        Rng rng = new Rng(6);
        int[] x = randomIds(rng, 4 * 8, 50), y = randomIds(rng, 4 * 8, 50);
        float first = 0, last = 0;
        for (int step = 0; step < 60; step++) {
            flat.zeroGrad();
            Tensor loss = m.loss(x, y, 4, 8);
            if (step == 0) first = loss.item();
            last = loss.item();
            loss.backward();
            opt.step(1e-2f);
        }
        assertThat(first).isCloseTo((float) Math.log(50), within(0.3f)); // padding columns are outside the softmax
        assertThat(last).isLessThan(first * 0.3f);
    }

    /**
     * Recycling step temporaries through a StepArena must not change a single bit of training: intermediates the
     * model releases are handed out again within the step, so an op that read one after its release (or a node that
     * did not hold what it saved) would train differently from the run without an arena.
     */
    @ParameterizedTest(name = "{0}, checkpointing {1}")
    @CsvSource({"FP32, false", "FP32, true", "BF16, false", "BF16, true"})
    void trainingInsideAStepArenaIsBitwiseIdentical(Precision precision, boolean checkpointing) {
        GptConfig cfg = new GptConfig(2, 2, 32, 16, 64, 0.1f, true);
        Rng rng = new Rng(8);
        int[] x = randomIds(rng, 4 * 16, 64), y = randomIds(rng, 4 * 16, 64);
        float[][] finalParams = new float[2][];
        float[][] losses = new float[2][5];
        for (int run = 0; run < 2; run++) {
            Gpt m = new Gpt(cfg, 1);
            m.setActivationCheckpointing(checkpointing);
            FlatParameters flat = FlatParameters.of(m);
            FlatOptimizer opt = new FlatOptimizer(flat, AdamW.gpt());
            StepArena arena = new StepArena();
            for (int step = 0; step < 5; step++) {
                flat.zeroGrad();
                try (var scope = run == 1 ? arena.open() : null; var cast = Autocast.with(precision)) {
                    Tensor loss = m.loss(x, y, 4, 16);
                    losses[run][step] = loss.item();
                    loss.backward();
                }
                opt.step(1e-3f);
            }
            finalParams[run] = flat.data().clone();
        }
        assertThat(losses[1]).containsExactly(losses[0]);
        assertThat(finalParams[1]).containsExactly(finalParams[0]);
    }

    /**
     * The thread count changes no bit of training: every kernel splits work so that each element takes the same
     * operations in the same order whatever range a thread gets (GEMM splits C; elementwise kernels mask their last
     * vector; reductions sum per row). A run resumed or compared on a machine with another core count depends on
     * it. The model is large enough that the elementwise kernels and the optimizer split over three threads at
     * ends that are not on a vector boundary.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"FP32", "BF16"})
    void theThreadCountChangesNoBitOfTraining(Precision precision) {
        GptConfig cfg = new GptConfig(2, 2, 160, 64, 256, 0.1f, true);
        Rng rng = new Rng(10);
        int[] x = randomIds(rng, 5 * 64, 256), y = randomIds(rng, 5 * 64, 256);
        float[][] finalParams = new float[2][];
        float[][] losses = new float[2][3];
        int saved = Parallel.threads();
        try {
            for (int run = 0; run < 2; run++) {
                Parallel.setThreads(run == 0 ? 1 : 3);
                Gpt m = new Gpt(cfg, 1);
                FlatParameters flat = FlatParameters.of(m);
                FlatOptimizer opt = new FlatOptimizer(flat, AdamW.gpt());
                for (int step = 0; step < 3; step++) {
                    flat.zeroGrad();
                    try (var cast = Autocast.with(precision)) {
                        Tensor loss = m.loss(x, y, 5, 64);
                        losses[run][step] = loss.item();
                        loss.backward();
                    }
                    opt.step(1e-2f);
                }
                finalParams[run] = flat.data().clone();
            }
        } finally {
            Parallel.setThreads(saved);
        }
        assertThat(losses[1]).as("losses, 3 threads against 1").containsExactly(losses[0]);
        int at = java.util.Arrays.mismatch(finalParams[1], finalParams[0]); // not containsExactly: its diff of 600K floats is quadratic
        assertThat(at).as("first parameter that differs, 3 threads against 1 (-1: none)").isEqualTo(-1);
    }

    /**
     * The step's arena has out at once little more than what backward keeps (the model releases the rest as it
     * goes); activation checkpointing and bf16 lower both.
     */
    @Test
    void aStepHoldsLittleMoreThanWhatBackwardKeeps() {
        GptConfig cfg = new GptConfig(3, 2, 64, 32, 256, 0f, true);
        Rng rng = new Rng(9);
        int[] x = randomIds(rng, 4 * 32, 256), y = randomIds(rng, 4 * 32, 256);
        long[][] m = new long[4][];
        int i = 0;
        for (Precision precision : new Precision[]{Precision.FP32, Precision.BF16})
            for (boolean ckpt : new boolean[]{false, true}) m[i++] = stepMemory(cfg, x, y, precision, ckpt);
        long[] fp32 = m[0], fp32Ckpt = m[1], bf16 = m[2], bf16Ckpt = m[3];
        System.out.printf("kept / out at once: fp32 %d / %d, ckpt %d / %d; bf16 %d / %d, ckpt %d / %d%n", fp32[0], fp32[1],
                fp32Ckpt[0], fp32Ckpt[1], bf16[0], bf16[1], bf16Ckpt[0], bf16Ckpt[1]);
        assertThat(fp32[1]).as("out at once, against kept for backward").isLessThan(fp32[0] * 3 / 2);
        assertThat(bf16[0]).as("bf16 keeps").isLessThan(fp32[0] * 6 / 10);
        assertThat(bf16[1]).isLessThan(fp32[1] * 8 / 10);
        // with checkpointing, what is out at once is one block's recompute plus the head's logits and gradients,
        // which a model this small is mostly made of
        assertThat(fp32Ckpt[1]).as("checkpointing").isLessThan(fp32[1] * 6 / 10);
        assertThat(bf16Ckpt[1]).isLessThan(bf16[1] * 3 / 4);
    }

    /** The shape-only parameter count (for the memory check before a model exists) is the model's own. */
    @Test
    void parameterCountsFromTheShapeAddUpToTheModel() {
        for (GptConfig cfg : new GptConfig[]{new GptConfig(3, 2, 64, 32, 256, 0f, true), new GptConfig(2, 4, 32, 16, 100, 0f, false)}) {
            Gpt m = new Gpt(cfg, 1);
            Gpt.ParameterCounts u = Gpt.parameterCounts(cfg);
            assertThat(u.total()).isEqualTo(m.parameterCount());
            assertThat(u.block()).isEqualTo(m.units().getFirst().stream().mapToLong(Tensor::numel).sum());
        }
    }

    /** The activation estimate the memory check uses is near what a step really has out at once. */
    @Test
    void activationEstimateIsNearTheMeasuredWorkingSet() {
        GptConfig cfg = new GptConfig(3, 2, 64, 32, 256, 0f, true);
        Rng rng = new Rng(9);
        int[] x = randomIds(rng, 4 * 32, 256), y = randomIds(rng, 4 * 32, 256);
        for (Precision p : new Precision[]{Precision.FP32, Precision.BF16}) {
            long measured = stepMemory(cfg, x, y, p, false)[1], predicted = Gpt.activationBytes(cfg, 4, p, false);
            assertThat((double) predicted / measured).as("%s: predicted %d, measured %d", p, predicted, measured).isBetween(0.85, 1.4);
        }
    }

    /** {activation bytes kept for backward at peak, the arena's peak bytes out at once} of the second step. */
    private static long[] stepMemory(GptConfig cfg, int[] x, int[] y, Precision precision, boolean checkpointing) {
        Gpt m = new Gpt(cfg, 1);
        m.setActivationCheckpointing(checkpointing);
        StepArena arena = new StepArena();
        long kept = 0;
        for (int step = 0; step < 2; step++) {
            SavedMemory.resetPeak();
            long base = SavedMemory.liveBytes();
            try (var scope = arena.open(); var cast = Autocast.with(precision)) {
                m.loss(x, y, 4, 32).backward();
            }
            kept = SavedMemory.peakBytes() - base;
        }
        return new long[]{kept, arena.peakLentBytes()};
    }

    @Test
    void generateIsDeterministicForASeedAndStaysInVocabulary() {
        Gpt m = new Gpt(TINY, 4);
        int[] a = m.generate(new int[]{1, 2, 3}, 20, 0.8f, 5, new Rng(1));
        int[] b = m.generate(new int[]{1, 2, 3}, 20, 0.8f, 5, new Rng(1));
        assertThat(a).containsExactly(b).hasSize(23);
        for (int id : a) assertThat(id).isBetween(0, TINY.vocabSize() - 1);
    }
}
