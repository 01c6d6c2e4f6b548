package dev.jtrain.autograd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;
import dev.jtrain.tensor.kernel.Precision;
import org.junit.jupiter.api.Test;

/**
 * What nodes keep for backward ({@link Saved}): inside {@link Autocast#bf16()} the inputs of bf16 products are kept
 * as bf16, which changes no gradient since the products round them anyway; cross-entropy after a bf16 product keeps
 * its gradient in bf16 instead of the logits; attention keeps qkv and recomputes P.
 */
class SavedActivationsTest {
    private static long keptBy(Runnable forward) {
        long before = SavedMemory.liveBytes();
        forward.run();
        return SavedMemory.liveBytes() - before;
    }

    @Test
    void aBf16LinearKeepsItsInputInBf16AndItsWeightGradientIsUnchanged() {
        Rng rng = new Rng(21);
        int rows = 37, in = 70, out = 45;
        Tensor x = Tensor.randn(rng, 1f, rows, in), w = Tensor.randn(rng, 1f, out, in).requiresGrad(true);
        Tensor[] y = new Tensor[1];
        long kept, base = SavedMemory.liveBytes();
        try (var cast = Autocast.bf16()) {
            kept = keptBy(() -> y[0] = F.linear(x, w, null));
        }
        assertThat(kept).as("bf16: two bytes per element").isEqualTo((long) Bf16.packedWords(rows * in) * Integer.BYTES)
                .isLessThan((long) rows * in * Float.BYTES * 55 / 100);
        Tensor gy = Tensor.randn(rng, 1f, rows, out);
        y[0].backward(gy);
        float[] expected = new float[out * in]; // dW = dyᵀ·x from the fp32 input, rounded by the bf16 product itself
        Precision.BF16.gemm(true, false, out, in, rows, 1f, gy.data(), 0, out, x.data(), 0, in, 0f, expected, 0, in);
        assertThat(w.grad().toArray()).containsExactly(expected);
        assertThat(SavedMemory.liveBytes()).as("let go after backward").isEqualTo(base);
    }

    @Test
    void crossEntropyAfterABf16ProductKeepsItsGradientInBf16() {
        Rng rng = new Rng(22);
        int rows = 45, in = 40, cols = 70; // rows: more than one chunk of the forward's gradient, and a partial one
        Tensor x = Tensor.randn(rng, 1f, rows, in), w = Tensor.randn(rng, 0.5f, cols, in).requiresGrad(true);
        Tensor zeroBias = Tensor.zeros(cols).requiresGrad(true);
        int[] targets = new int[rows];
        for (int r = 0; r < rows; r++) targets[r] = r == 3 ? -1 : rng.nextInt(cols);
        float[][] grads = new float[2][];
        long[] kept = new long[2];
        for (int v = 0; v < 2; v++) {
            // v = 0: no bias, so the product reads the gradient only in bf16; v = 1: a bias (zero, so the logits are
            // the same) sums it in fp32, and cross-entropy keeps the fp32 logits as before
            Tensor bias = v == 0 ? null : zeroBias;
            w.setGrad(null);
            Tensor[] loss = new Tensor[1];
            try (var cast = Autocast.bf16()) {
                Tensor logits = F.linear(x, w, bias);
                kept[v] = keptBy(() -> loss[0] = F.crossEntropy(logits, targets));
            }
            loss[0].backward();
            grads[v] = w.grad().toArray();
        }
        assertThat(grads[0]).as("the product gets the bf16 gradient it would have rounded to").containsExactly(grads[1]);
        assertThat(kept[1]).isEqualTo((long) rows * cols * Float.BYTES);
        assertThat(kept[0]).isEqualTo((long) Bf16.packedWords(rows * cols) * Integer.BYTES);

        // an incoming gradient other than 1 scales the kept one (rounded twice: within bf16's unit roundoff)
        w.setGrad(null);
        Tensor loss;
        try (var cast = Autocast.bf16()) {
            loss = F.crossEntropy(F.linear(x, w, null), targets);
        }
        F.scale(loss, 0.37f).backward();
        float[] scaled = w.grad().toArray();
        double worst = 0, largest = 0;
        for (int i = 0; i < scaled.length; i++) {
            worst = Math.max(worst, Math.abs(scaled[i] - 0.37 * grads[1][i]));
            largest = Math.max(largest, Math.abs(grads[1][i]));
        }
        assertThat(worst).isLessThan(4 * Bf16.UNIT_ROUNDOFF * 0.37 * largest).isGreaterThan(0);
    }

    @Test
    void attentionKeepsQkvOnlyAndRecomputesP() {
        Rng rng = new Rng(23);
        int b = 2, t = 48, c = 32, heads = 4;
        Tensor qkv = Tensor.randn(rng, 1f, b, t, 3 * c).requiresGrad(true);
        long fp32 = keptBy(() -> F.causalSelfAttention(qkv, heads, 0f, null));
        assertThat(fp32).as("qkv, no B·H·T² probabilities").isEqualTo((long) b * t * 3 * c * Float.BYTES);
        long bf16;
        try (var cast = Autocast.bf16()) {
            bf16 = keptBy(() -> F.causalSelfAttention(qkv, heads, 0f, null));
        }
        assertThat(bf16).isEqualTo((long) Bf16.packedWords(b * t * 3 * c) * Integer.BYTES);
    }
}
