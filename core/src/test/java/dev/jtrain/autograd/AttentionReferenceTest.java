package dev.jtrain.autograd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Fused causal attention, forward and backward, against a plain double-precision reference on every element. The
 * lengths cross {@link AttentionOps#BLOCK}: the products run block by block over the causal triangle, so a wrong
 * block offset or a skipped block shows up here (a finite-difference check samples too few entries to be sure).
 * With dropout, the reference draws the same mask from the same generator, in the order the op draws it.
 */
class AttentionReferenceTest {

    @ParameterizedTest(name = "B={0} T={1} heads={2} hs={3}")
    @CsvSource({"1, 48, 2, 8, 0", "2, 100, 2, 8, 0", "1, 145, 3, 5, 0", "1, 7, 1, 4, 0", "2, 100, 2, 8, 0.25"})
    void matchesThePlainDefinition(int b, int t, int heads, int hs, float dropout) {
        int c = heads * hs;
        Rng rng = new Rng(42 + t);
        Tensor qkv = Tensor.randn(rng, 1f, b, t, 3 * c).requiresGrad(true);
        Tensor g = Tensor.randn(rng, 1f, b, t, c);
        Tensor y = F.causalSelfAttention(qkv, heads, dropout, new Rng(7));
        y.mul(g).sum().backward();

        double[] mask = new double[b * heads * t * t];
        Rng maskRng = new Rng(7);
        for (int i = 0; i < mask.length; i++) mask[i] = maskRng.nextFloat() >= dropout ? 1f / (1f - dropout) : 0f;
        double[][] ref = reference(qkv.toArray(), g.toArray(), mask, b, t, heads, hs);
        float[] yd = y.toArray(), dx = qkv.grad().toArray();
        for (int i = 0; i < yd.length; i++) assertThat((double) yd[i]).as("y[%d]", i).isCloseTo(ref[0][i], within(1e-5));
        for (int i = 0; i < dx.length; i++) assertThat((double) dx[i]).as("dqkv[%d]", i).isCloseTo(ref[1][i], within(2e-5));
    }

    /**
     * {y, dqkv} of causal attention with upstream gradient g and dropout mask m (per (b, h), t x t) on P, straight
     * from the definition, in double.
     */
    private static double[][] reference(float[] x, float[] g, double[] m, int batches, int t, int heads, int hs) {
        int c = heads * hs, c3 = 3 * c;
        double scale = 1 / Math.sqrt(hs);
        double[] y = new double[batches * t * c], dx = new double[batches * t * c3];
        for (int b = 0; b < batches; b++) {
            for (int h = 0; h < heads; h++) {
                int q = b * t * c3 + h * hs, k = q + c, v = q + 2 * c, o = b * t * c + h * hs;
                double[][] p = new double[t][t], ds = new double[t][t];
                int mo = (b * heads + h) * t * t;
                for (int i = 0; i < t; i++) {
                    double max = Double.NEGATIVE_INFINITY, sum = 0;
                    for (int j = 0; j <= i; j++) {
                        double s = 0;
                        for (int d = 0; d < hs; d++) s += x[q + i * c3 + d] * x[k + j * c3 + d];
                        p[i][j] = s * scale;
                        max = Math.max(max, p[i][j]);
                    }
                    for (int j = 0; j <= i; j++) sum += p[i][j] = Math.exp(p[i][j] - max);
                    for (int j = 0; j <= i; j++) p[i][j] /= sum;
                    for (int d = 0; d < hs; d++) {
                        double acc = 0;
                        for (int j = 0; j <= i; j++) acc += p[i][j] * m[mo + i * t + j] * x[v + j * c3 + d];
                        y[o + i * c + d] = acc;
                    }
                    double[] dp = new double[i + 1];
                    double dot = 0;
                    for (int j = 0; j <= i; j++) {
                        for (int d = 0; d < hs; d++) dp[j] += g[o + i * c + d] * x[v + j * c3 + d];
                        dp[j] *= m[mo + i * t + j];
                        dot += p[i][j] * dp[j];
                    }
                    for (int j = 0; j <= i; j++) ds[i][j] = p[i][j] * (dp[j] - dot) * scale;
                }
                for (int i = 0; i < t; i++) {
                    for (int j = 0; j <= i; j++) {
                        for (int d = 0; d < hs; d++) {
                            dx[q + i * c3 + d] += ds[i][j] * x[k + j * c3 + d]; // dq_i
                            dx[k + j * c3 + d] += ds[i][j] * x[q + i * c3 + d];                        // dk_j
                            dx[v + j * c3 + d] += p[i][j] * m[mo + i * t + j] * g[o + i * c + d];       // dv_j
                        }
                    }
                }
            }
        }
        return new double[][]{y, dx};
    }
}
