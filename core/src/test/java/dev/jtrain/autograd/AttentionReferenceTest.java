package dev.jtrain.autograd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Fused causal attention, forward and backward, against a plain double-precision reference on every element. The
 * lengths cross {@link AttentionOps#BLOCK}: the products run block by block over the causal triangle, so a wrong
 * block offset or a skipped block shows up here (a finite-difference check samples too few entries to be sure).
 * With dropout, the reference draws the same mask from the same generator, in the order the op draws it.
 *
 * <p>In bf16 ({@link Autocast#bf16()}) each of the products reads its operands rounded to bf16, as the reference does
 * here; the computed P and dS it rounds can still land on the other side of a rounding boundary from the reference's,
 * which moves a sum by up to 2^-8 of a term, so the bound is looser: offsets, operands or ranges mixed up in the
 * packed-once path ({@link dev.jtrain.tensor.kernel.Bf16PackedB}) are off by far more.
 */
class AttentionReferenceTest {

    @ParameterizedTest(name = "B={0} T={1} heads={2} hs={3} dropout={4} bf16={5}")
    @CsvSource({"1, 48, 2, 8, 0, false", "2, 100, 2, 8, 0, false", "1, 145, 3, 5, 0, false", "1, 7, 1, 4, 0, false",
            "2, 100, 2, 8, 0.25, false", "2, 100, 2, 8, 0, true", "1, 145, 3, 5, 0, true", "2, 100, 2, 8, 0.25, true",
            "1, 256, 2, 64, 0, true", "1, 7, 1, 4, 0, true"})
    void matchesThePlainDefinition(int b, int t, int heads, int hs, float dropout, boolean bf16) {
        int c = heads * hs;
        Rng rng = new Rng(42 + t);
        Tensor qkv = Tensor.randn(rng, 1f, b, t, 3 * c).requiresGrad(true);
        Tensor g = Tensor.randn(rng, 1f, b, t, c);
        Tensor y;
        try (var cast = bf16 ? Autocast.bf16() : null) {
            y = F.causalSelfAttention(qkv, heads, dropout, new Rng(7));
        }
        y.mul(g).sum().backward();

        double[] mask = new double[b * heads * t * t];
        Rng maskRng = new Rng(7);
        for (int i = 0; i < mask.length; i++) mask[i] = maskRng.nextFloat() >= dropout ? 1f / (1f - dropout) : 0f;
        double[][] ref = reference(qkv.toArray(), g.toArray(), mask, b, t, heads, hs, bf16);
        float[] yd = y.toArray(), dx = qkv.grad().toArray();
        double tolY = bf16 ? 4e-3 : 1e-5, tolDx = bf16 ? 8e-3 : 2e-5;
        for (int i = 0; i < yd.length; i++) assertThat((double) yd[i]).as("y[%d]", i).isCloseTo(ref[0][i], within(tolY));
        for (int i = 0; i < dx.length; i++) assertThat((double) dx[i]).as("dqkv[%d]", i).isCloseTo(ref[1][i], within(tolDx));
    }

    private static double r(double v, boolean bf16) {
        return bf16 ? Bf16.round((float) v) : v;
    }

    /**
     * {y, dqkv} of causal attention with upstream gradient g and dropout mask m (per (b, h), t x t) on P, straight
     * from the definition, in double.
     */
    private static double[][] reference(float[] x0, float[] g0, double[] m, int batches, int t, int heads, int hs,
                                        boolean bf16) {
        double[] x = new double[x0.length], g = new double[g0.length]; // what the products read
        for (int i = 0; i < x.length; i++) x[i] = r(x0[i], bf16);
        for (int i = 0; i < g.length; i++) g[i] = r(g0[i], bf16);
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
                        for (int j = 0; j <= i; j++) acc += r(p[i][j] * m[mo + i * t + j], bf16) * x[v + j * c3 + d];
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
                            double dsr = r(ds[i][j], bf16);
                            dx[q + i * c3 + d] += dsr * x[k + j * c3 + d];                               // dq_i
                            dx[k + j * c3 + d] += dsr * x[q + i * c3 + d];                               // dk_j
                            dx[v + j * c3 + d] += r(p[i][j] * m[mo + i * t + j], bf16) * g[o + i * c + d]; // dv_j
                        }
                    }
                }
            }
        }
        return new double[][]{y, dx};
    }
}
