package dev.jtrain.autograd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;
import dev.jtrain.tensor.kernel.Precision;
import dev.jtrain.tensor.kernel.Sgemm;
import org.junit.jupiter.api.Test;

/**
 * {@link Autocast}: inside {@code bf16()} linear layers, matmuls and attention compute on bf16-rounded operands;
 * their backward runs in the precision recorded at forward even when it runs outside the scope; activation
 * checkpointing recomputes in that precision; the scope restores what was there before.
 */
class AutocastTest {
    private static float[] reference(float[] x, float[] w, int rows, int in, int out, boolean round) {
        float[] xr = x.clone(), wr = w.clone(), y = new float[rows * out];
        if (round) {
            for (int i = 0; i < xr.length; i++) xr[i] = Bf16.round(xr[i]);
            for (int i = 0; i < wr.length; i++) wr[i] = Bf16.round(wr[i]);
        }
        Sgemm.reference(false, true, rows, out, in, 1f, xr, 0, in, wr, 0, in, 0f, y, 0, out);
        return y;
    }

    private static double maxDiff(float[] a, float[] b) {
        double d = 0;
        for (int i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
        return d;
    }

    @Test
    void linearRunsOnBf16OperandsInsideTheScopeOnly() {
        Rng rng = new Rng(3);
        int rows = 37, in = 70, out = 45;
        Tensor x = Tensor.randn(rng, 1f, rows, in), w = Tensor.randn(rng, 1f, out, in);
        float[] exact = reference(x.toArray(), w.toArray(), rows, in, out, false);
        float[] rounded = reference(x.toArray(), w.toArray(), rows, in, out, true);
        float[] fp32 = F.linear(x, w, null).toArray();
        float[] bf16;
        try (var cast = Autocast.bf16()) {
            assertThat(Autocast.precision()).isEqualTo(Precision.BF16);
            bf16 = F.linear(x, w, null).toArray();
        }
        assertThat(Autocast.precision()).as("restored").isEqualTo(Precision.FP32);
        // fp32 sums within ~1e-5 of the fp32 answer; bf16 matches the rounded operands that closely instead
        assertThat(maxDiff(fp32, exact)).isLessThan(1e-4);
        assertThat(maxDiff(bf16, rounded)).isLessThan(1e-4);
        assertThat(maxDiff(bf16, exact)).as("bf16 rounding shows").isGreaterThan(1e-3);
    }

    @Test
    void backwardRunsInTheForwardsPrecisionWhereverItRuns() {
        Rng rng = new Rng(4);
        Tensor x = Tensor.randn(rng, 1f, 30, 64).requiresGrad(true), w = Tensor.randn(rng, 1f, 50, 64).requiresGrad(true);
        Tensor y;
        try (var cast = Autocast.bf16()) {
            y = F.sum(F.linear(x, w, null));
        }
        y.backward(); // outside the scope
        float[] gx = x.grad().toArray();
        // dL/dx = 1 . W for every row: with bf16 operands, that is the column sums of the rounded W
        float[] w32 = w.toArray();
        double worstRounded = 0, worstExact = 0;
        for (int c = 0; c < 64; c++) {
            double sumRounded = 0, sumExact = 0;
            for (int o = 0; o < 50; o++) {
                sumRounded += Bf16.round(w32[o * 64 + c]);
                sumExact += w32[o * 64 + c];
            }
            worstRounded = Math.max(worstRounded, Math.abs(gx[c] - sumRounded));
            worstExact = Math.max(worstExact, Math.abs(gx[c] - sumExact));
        }
        assertThat(worstRounded).as("backward used bf16 operands").isLessThan(1e-4);
        assertThat(worstExact).isGreaterThan(1e-3);
    }

    @Test
    void checkpointedBlocksRecomputeInTheForwardsPrecision() {
        Rng rng = new Rng(5);
        Tensor w1 = Tensor.randn(rng, 0.3f, 48, 32).requiresGrad(true), w2 = Tensor.randn(rng, 0.3f, 32, 48).requiresGrad(true);
        Tensor x = Tensor.randn(rng, 1f, 20, 32).requiresGrad(true);
        java.util.function.UnaryOperator<Tensor> block = t -> F.linear(F.gelu(F.linear(t, w1, null)), w2, null);
        float[][] grads = new float[2][];
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            x.setGrad(null);
            w1.setGrad(null);
            w2.setGrad(null);
            Tensor loss;
            try (var cast = Autocast.bf16()) {
                loss = F.sum(ckpt == 1 ? Checkpoint.apply(block, x, null) : block.apply(x));
            }
            loss.backward(); // the checkpoint's recompute happens here, outside the scope
            grads[ckpt] = w1.grad().toArray();
        }
        assertThat(grads[1]).as("recomputed in bf16, as the forward was").isEqualTo(grads[0]);
    }
}
