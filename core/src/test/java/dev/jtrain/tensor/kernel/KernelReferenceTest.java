package dev.jtrain.tensor.kernel;

import dev.jtrain.tensor.Rng;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Vector API kernels against plain double-precision references on odd sizes (tails shorter than a vector, a
 * single element, sizes around the vector width). Tolerance 1e-5 relative: fp32 accumulation order differs.
 */
class KernelReferenceTest {
    private final Rng rng = new Rng(42);

    private float[] randn(int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) rng.nextGaussian();
        return a;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 15, 16, 17, 63, 65, 1000, 70001})
    void elementwiseAndReductions(int n) {
        float[] a = randn(n + 3), b = randn(n + 5), out = new float[n + 2];
        VectorOps.add(a, 3, b, 5, out, 2, n);
        for (int i = 0; i < n; i++) assertThat(out[2 + i]).isEqualTo(a[3 + i] + b[5 + i]);
        VectorOps.mul(a, 3, b, 5, out, 2, n);
        for (int i = 0; i < n; i++) assertThat(out[2 + i]).isEqualTo(a[3 + i] * b[5 + i]);
        float[] y = b.clone();
        VectorOps.axpy(0.5f, a, 3, y, 5, n);
        for (int i = 0; i < n; i++) assertThat(y[5 + i]).isCloseTo(b[5 + i] + 0.5f * a[3 + i], within(1e-6f));
        double s = 0, ss = 0;
        for (int i = 0; i < n; i++) {
            s += a[3 + i];
            ss += (double) a[3 + i] * a[3 + i];
        }
        assertThat(VectorOps.sum(a, 3, n)).isCloseTo(s, within(1e-4 * Math.max(1, Math.abs(s)) + 1e-3));
        assertThat(VectorOps.sumSquares(a, 3, n)).isCloseTo(ss, within(1e-5 * ss));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 33, 64, 65, 384})
    void layerNormMatchesReference(int cols) {
        int rows = 5;
        float[] x = randn(rows * cols), w = randn(cols), b = randn(cols), dy = randn(rows * cols);
        float[] out = new float[rows * cols], mean = new float[rows], rstd = new float[rows];
        LayerNormKernel.forward(x, 0, w, b, 0, 0, out, 0, mean, rstd, rows, cols, 1e-5f);
        float[] dx = new float[rows * cols], dw = new float[cols], db = new float[cols];
        LayerNormKernel.backward(dy, 0, x, 0, w, 0, mean, rstd, dx, 0, dw, 0, db, 0, rows, cols);
        double[] rdw = new double[cols], rdb = new double[cols];
        for (int r = 0; r < rows; r++) {
            double m = 0, v = 0;
            for (int c = 0; c < cols; c++) m += x[r * cols + c];
            m /= cols;
            for (int c = 0; c < cols; c++) v += Math.pow(x[r * cols + c] - m, 2);
            double rs = 1 / Math.sqrt(v / cols + 1e-5);
            double sg = 0, sgx = 0;
            for (int c = 0; c < cols; c++) {
                double xh = (x[r * cols + c] - m) * rs;
                assertThat(out[r * cols + c]).isCloseTo((float) (xh * w[c] + b[c]), within(1e-4f));
                double g = dy[r * cols + c] * w[c];
                sg += g;
                sgx += g * xh;
                rdw[c] += dy[r * cols + c] * xh;
                rdb[c] += dy[r * cols + c];
            }
            for (int c = 0; c < cols; c++) {
                double xh = (x[r * cols + c] - m) * rs;
                double ref = rs * (dy[r * cols + c] * w[c] - sg / cols - xh * sgx / cols);
                assertThat((double) dx[r * cols + c]).isCloseTo(ref, within(1e-3 * Math.max(1, Math.abs(ref))));
            }
        }
        for (int c = 0; c < cols; c++) {
            assertThat((double) dw[c]).isCloseTo(rdw[c], within(1e-4 * Math.max(1, Math.abs(rdw[c]))));
            assertThat((double) db[c]).isCloseTo(rdb[c], within(1e-4 * Math.max(1, Math.abs(rdb[c]))));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 17, 65, 1000})
    void geluMatchesScalar(int n) {
        float[] x = randn(n), dy = randn(n), out = new float[n], grad = new float[n + 3], dx = new float[n];
        GeluKernel.forward(x, 0, out, 0, n, grad, 3);
        GeluKernel.backward(dy, 0, grad, 3, dx, 0, n);
        float[] plain = new float[n];
        GeluKernel.forward(x, 0, plain, 0, n);
        assertThat(plain).as("forward without the derivative").containsExactly(out);
        for (int i = 0; i < n; i++) {
            assertThat(out[i]).isCloseTo(GeluKernel.scalar(x[i]), within(2e-6f * Math.max(1, Math.abs(x[i]))));
            assertThat(grad[3 + i]).isCloseTo(GeluKernel.scalarGrad(x[i]), within(1e-5f));
            assertThat(dx[i]).isCloseTo(dy[i] * GeluKernel.scalarGrad(x[i]), within(1e-5f * Math.max(1, Math.abs(dy[i]))));
        }
    }

    /**
     * Elementwise kernels give the same bits whether a range is done at once or split where a thread's range or a
     * ZeRO shard may end (not on a vector boundary): a tail done differently from the vector body (a scalar loop in
     * double, mul then add where the vector fuses them) made training bits depend on the thread count and sharding.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 7, 21, 500, 999})
    void elementwiseKernelsGiveTheSameBitsWhereverARangeIsSplit(int split) {
        int n = 1000;
        // the first step (m = v = 0) with a large rate, so that the last bit of each term reaches the result
        float[] g = randn(n), p0 = randn(n), m0 = new float[n], v0 = new float[n], x = randn(n), y0 = randn(n);
        float[] pa = p0.clone(), ma = m0.clone(), va = v0.clone(), pb = p0.clone(), mb = m0.clone(), vb = v0.clone();
        AdamWKernel.step(pa, 0, g, 0, ma, 0, va, 0, n, 0.5f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
        AdamWKernel.step(pb, 0, g, 0, mb, 0, vb, 0, split, 0.5f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
        AdamWKernel.step(pb, split, g, split, mb, split, vb, split, n - split, 0.5f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
        assertThat(pb).as("AdamW p").containsExactly(pa);
        assertThat(mb).as("AdamW m").containsExactly(ma);
        assertThat(vb).as("AdamW v").containsExactly(va);

        float[] ya = y0.clone(), yb = y0.clone();
        VectorOps.axpy(0.3f, x, 0, ya, 0, n);
        VectorOps.axpy(0.3f, x, 0, yb, 0, split);
        VectorOps.axpy(0.3f, x, split, yb, split, n - split);
        assertThat(yb).as("axpy").containsExactly(ya);

        float[] oa = new float[n], ob = new float[n], da = new float[n], db = new float[n];
        GeluKernel.forward(x, 0, oa, 0, n, da, 0);
        GeluKernel.forward(x, 0, ob, 0, split, db, 0);
        GeluKernel.forward(x, split, ob, split, n - split, db, split);
        assertThat(ob).as("GELU").containsExactly(oa);
        assertThat(db).as("GELU derivative").containsExactly(da);
    }

    /**
     * GELU under bf16 keeps its derivative rounded to bf16 (packed piece by piece by the forward, widened piece by
     * piece by the backward): the forward's output is the fp32 kernel's, the copy is {@link Bf16#pack} of the fp32
     * derivative, and backward is dy times that copy widened, at sizes that end inside a piece and a packing block
     * and span several pieces on two threads.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 33, 4096, 4097, 70001})
    void geluUnderBf16KeepsItsDerivativeRoundedToBf16(int n) {
        int saved = Parallel.threads();
        Parallel.setThreads(2);
        try {
            float[] x = randn(n), dy = randn(n), out = new float[n + 1], want = new float[n + 1], grad = new float[n];
            int[] keep = new int[Bf16.packedWords(n)], packed = new int[Bf16.packedWords(n)];
            GeluKernel.forward(x, 0, out, 1, n, keep);
            GeluKernel.forward(x, 0, want, 1, n, grad, 0);
            assertThat(out).containsExactly(want);
            Bf16.pack(grad, 0, n, packed);
            assertThat(keep).containsExactly(packed);

            float[] dx = new float[n + 2], dxWant = new float[n + 2];
            GeluKernel.backward(dy, 0, keep, dx, 2, n);
            for (int i = 0; i < n; i++) dxWant[2 + i] = dy[i] * Bf16.round(grad[i]);
            assertThat(dx).containsExactly(dxWant);
        } finally {
            Parallel.setThreads(saved);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 17, 65, 256, 1000})
    void crossEntropyMatchesReference(int cols) {
        int rows = 4;
        float[] z = randn(rows * cols);
        int[] t = {0, cols - 1, -1, cols / 2};
        float[] lse = new float[rows], loss = new float[rows], dz = new float[rows * cols];
        CrossEntropyKernel.forward(z, 0, t, rows, cols, cols, lse, loss);
        CrossEntropyKernel.backward(z, 0, t, lse, 0.25f, rows, cols, cols, dz, 0);
        for (int r = 0; r < rows; r++) {
            double max = Double.NEGATIVE_INFINITY, s = 0;
            for (int c = 0; c < cols; c++) max = Math.max(max, z[r * cols + c]);
            for (int c = 0; c < cols; c++) s += Math.exp(z[r * cols + c] - max);
            double l = max + Math.log(s);
            assertThat((double) lse[r]).isCloseTo(l, within(1e-5 * Math.max(1, Math.abs(l))));
            if (t[r] < 0) {
                assertThat(loss[r]).isZero();
                for (int c = 0; c < cols; c++) assertThat(dz[r * cols + c]).isZero();
                continue;
            }
            assertThat((double) loss[r]).isCloseTo(l - z[r * cols + t[r]], within(1e-4));
            for (int c = 0; c < cols; c++) {
                double ref = (Math.exp(z[r * cols + c] - l) - (c == t[r] ? 1 : 0)) * 0.25;
                assertThat((double) dz[r * cols + c]).isCloseTo(ref, within(1e-6));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 9, 16, 65, 5000})
    void softmaxPrefixMatchesReference(int cols) {
        float[] row = randn(cols);
        float[] orig = row.clone();
        int len = Math.max(1, cols / 2 + 1);
        SoftmaxKernel.softmaxPrefix(row, 0, len, cols, 0.7f);
        double max = Double.NEGATIVE_INFINITY, s = 0;
        for (int c = 0; c < len; c++) max = Math.max(max, orig[c] * 0.7);
        for (int c = 0; c < len; c++) s += Math.exp(orig[c] * 0.7 - max);
        for (int c = 0; c < cols; c++) {
            double ref = c < len ? Math.exp(orig[c] * 0.7 - max) / s : 0;
            assertThat((double) row[c]).isCloseTo(ref, within(1e-6));
        }
    }

    /** Rows whose last vector fits run on whole vectors (lanes past the prefix at -inf); the others masked: same bits. */
    @Test
    void softmaxPrefixOnWholeVectorsMatchesTheMaskedLoopBitForBit() {
        int cols = 256;
        for (int len = 1; len <= cols; len++) {
            float[] row = randn(cols);
            float[] masked = row.clone();
            SoftmaxKernel.softmaxPrefix(row, 0, len, cols, 0.125f);
            SoftmaxKernel.softmaxPrefixMasked(masked, 0, len, cols, 0.125f);
            for (int c = 0; c < cols; c++)
                assertThat(Float.floatToRawIntBits(row[c])).as("len %d col %d", len, c).isEqualTo(Float.floatToRawIntBits(masked[c]));
        }
    }

    /** Past the prefix lies whatever the row held (here NaN): a ragged end read as a vector must not count it. */
    @ParameterizedTest
    @ValueSource(ints = {1, 9, 16, 33, 65, 300})
    void softmaxPrefixForwardAndBackwardIgnoreWhatLiesPastThePrefix(int len) {
        int cols = len + 40;
        float[] row = randn(cols);
        float[] orig = row.clone();
        java.util.Arrays.fill(row, len, cols, Float.NaN);
        SoftmaxKernel.softmaxPrefix(row, 0, len, cols, 0.7f);
        double max = Double.NEGATIVE_INFINITY, s = 0;
        for (int c = 0; c < len; c++) max = Math.max(max, orig[c] * 0.7);
        for (int c = 0; c < len; c++) s += Math.exp(orig[c] * 0.7 - max);
        double[] p = new double[len];
        for (int c = 0; c < len; c++) p[c] = Math.exp(orig[c] * 0.7 - max) / s;
        for (int c = 0; c < cols; c++) assertThat((double) row[c]).isCloseTo(c < len ? p[c] : 0, within(1e-6));

        float[] dp = randn(cols);
        float[] dpOrig = dp.clone();
        java.util.Arrays.fill(dp, len, cols, Float.NaN);
        float[] dz = new float[cols];
        java.util.Arrays.fill(dz, Float.NaN);
        SoftmaxKernel.softmaxPrefixBackward(row, 0, dp, 0, dz, 0, len, cols, 0.7f);
        double dot = 0;
        for (int c = 0; c < len; c++) dot += p[c] * dpOrig[c];
        for (int c = 0; c < cols; c++) {
            double ref = c < len ? p[c] * (dpOrig[c] - dot) * 0.7 : 0;
            assertThat((double) dz[c]).isCloseTo(ref, within(1e-6));
        }
    }

    @Test
    void adamWMatchesReference() {
        int n = 1037;
        float[] p = randn(n), g = randn(n), m = new float[n], v = new float[n];
        float[] rp = p.clone(), rm = m.clone(), rv = v.clone();
        for (int t = 1; t <= 3; t++) {
            AdamWKernel.step(p, 0, g, 0, m, 0, v, 0, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
            AdamWKernel.reference(rp, g, rm, rv, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
        }
        for (int i = 0; i < n; i++) assertThat(p[i]).isCloseTo(rp[i], within(1e-5f));
    }

    @Test
    void sumRowsMatchesReference() {
        int rows = 300, cols = 333;
        float[] x = randn(rows * cols), out = new float[cols];
        VectorOps.sumRows(x, 0, rows, cols, out, 0, false);
        for (int c = 0; c < cols; c++) {
            double s = 0;
            for (int r = 0; r < rows; r++) s += x[r * cols + c];
            assertThat((double) out[c]).isCloseTo(s, within(1e-3));
        }
    }
}
