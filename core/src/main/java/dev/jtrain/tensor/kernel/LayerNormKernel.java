package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * LayerNorm over the last dimension (Ba et al. 2016), fused forward and backward as in llm.c: the forward saves
 * per-row mean and 1/std so backward needs no second pass over statistics.
 *
 * <p>Backward per row, with x̂ = (x - μ)·rstd and g = dy ⊙ w:
 * dx = rstd · (g - mean(g) - x̂ · mean(g ⊙ x̂)); dw += dy ⊙ x̂; db += dy.
 */
public final class LayerNormKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int PARTIAL_SUMS = 8;

    private LayerNormKernel() {}

    public static void forward(float[] x, int xo, float[] w, float[] b, int wo, int bo, float[] out, int oo,
                               float[] mean, float[] rstd, int rows, int cols, float eps) {
        Parallel.forRange(rows, Math.max(1, 8192 / cols), (lo, hi) -> {
            for (int r = lo; r < hi; r++) {
                int base = xo + r * cols;
                int ob = oo + r * cols;
                int c = 0, upper = S.loopBound(cols);
                FloatVector acc = FloatVector.zero(S);
                for (; c < upper; c += S.length()) acc = acc.add(FloatVector.fromArray(S, x, base + c));
                float s = VectorMath.sum(acc);
                for (; c < cols; c++) s += x[base + c];
                float m = s / cols;
                FloatVector vm = FloatVector.broadcast(S, m);
                FloatVector acc2 = FloatVector.zero(S);
                for (c = 0; c < upper; c += S.length()) {
                    FloatVector d = FloatVector.fromArray(S, x, base + c).sub(vm);
                    acc2 = d.fma(d, acc2);
                }
                float v = VectorMath.sum(acc2);
                for (; c < cols; c++) {
                    float d = x[base + c] - m;
                    v += d * d;
                }
                float rs = (float) (1.0 / Math.sqrt(v / cols + eps));
                mean[r] = m;
                rstd[r] = rs;
                FloatVector vr = FloatVector.broadcast(S, rs);
                for (c = 0; c < upper; c += S.length()) {
                    FloatVector xh = FloatVector.fromArray(S, x, base + c).sub(vm).mul(vr);
                    FloatVector y = xh.mul(FloatVector.fromArray(S, w, wo + c));
                    if (b != null) y = y.add(FloatVector.fromArray(S, b, bo + c));
                    y.intoArray(out, ob + c);
                }
                for (; c < cols; c++)
                    out[ob + c] = (x[base + c] - m) * rs * w[wo + c] + (b != null ? b[bo + c] : 0f);
            }
        });
    }

    /**
     * dx is overwritten; dw/db (may be null) are accumulated. Row-parallel with per-chunk partial sums for dw/db
     * so threads never write the same element.
     */
    public static void backward(float[] dy, int dyo, float[] x, int xo, float[] w, int wo, float[] mean, float[] rstd,
                                float[] dx, int dxo, float[] dw, int dwo, float[] db, int dbo, int rows, int cols) {
        // A fixed number of partial sums, independent of the thread count, so dw/db have the same bits on any machine.
        int chunks = Math.min(PARTIAL_SUMS, Math.max(1, rows / 4));
        float[][] pdw = new float[chunks][cols];
        float[][] pdb = new float[chunks][cols];
        Parallel.forRange(chunks, 1, (clo, chi) -> {
            for (int ch = clo; ch < chi; ch++) {
                int r0 = (int) ((long) rows * ch / chunks), r1 = (int) ((long) rows * (ch + 1) / chunks);
                float[] lw = pdw[ch], lb = pdb[ch];
                for (int r = r0; r < r1; r++) rowBackward(dy, dyo + r * cols, x, xo + r * cols, w, wo, mean[r], rstd[r],
                        dx, dxo + r * cols, lw, lb, cols);
            }
        });
        for (int ch = 0; ch < chunks; ch++) {
            if (dw != null) for (int c = 0; c < cols; c++) dw[dwo + c] += pdw[ch][c];
            if (db != null) for (int c = 0; c < cols; c++) db[dbo + c] += pdb[ch][c];
        }
    }

    private static void rowBackward(float[] dy, int dyb, float[] x, int xb, float[] w, int wo, float m, float rs,
                                    float[] dx, int dxb, float[] dw, float[] db, int cols) {
        int upper = S.loopBound(cols);
        FloatVector vm = FloatVector.broadcast(S, m), vr = FloatVector.broadcast(S, rs);
        FloatVector sg = FloatVector.zero(S), sgx = FloatVector.zero(S);
        int c = 0;
        for (; c < upper; c += S.length()) {
            FloatVector d = FloatVector.fromArray(S, dy, dyb + c);
            FloatVector xh = FloatVector.fromArray(S, x, xb + c).sub(vm).mul(vr);
            FloatVector g = d.mul(FloatVector.fromArray(S, w, wo + c));
            sg = sg.add(g);
            sgx = g.fma(xh, sgx);
            d.fma(xh, FloatVector.fromArray(S, dw, c)).intoArray(dw, c);
            d.add(FloatVector.fromArray(S, db, c)).intoArray(db, c);
        }
        float sumG = VectorMath.sum(sg), sumGx = VectorMath.sum(sgx);
        for (; c < cols; c++) {
            float xh = (x[xb + c] - m) * rs;
            float g = dy[dyb + c] * w[wo + c];
            sumG += g;
            sumGx += g * xh;
            dw[c] += dy[dyb + c] * xh;
            db[c] += dy[dyb + c];
        }
        float mg = sumG / cols, mgx = sumGx / cols;
        FloatVector vmg = FloatVector.broadcast(S, mg), vmgx = FloatVector.broadcast(S, mgx);
        for (c = 0; c < upper; c += S.length()) {
            FloatVector xh = FloatVector.fromArray(S, x, xb + c).sub(vm).mul(vr);
            FloatVector g = FloatVector.fromArray(S, dy, dyb + c).mul(FloatVector.fromArray(S, w, wo + c));
            g.sub(vmg).sub(xh.mul(vmgx)).mul(vr).intoArray(dx, dxb + c);
        }
        for (; c < cols; c++) {
            float xh = (x[xb + c] - m) * rs;
            float g = dy[dyb + c] * w[wo + c];
            dx[dxb + c] = rs * (g - mg - xh * mgx);
        }
    }
}
