package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * GELU with the tanh approximation used by GPT-2 ("gelu_new", Hendrycks & Gimpel 2016):
 * gelu(x) = ½x(1 + tanh(√(2/π)(x + 0.044715x³))).
 */
public final class GeluKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    static final float K = (float) Math.sqrt(2.0 / Math.PI);
    static final float A = 0.044715f;

    private GeluKernel() {}

    public static void forward(float[] x, int xo, float[] out, int oo, int n) {
        Parallel.forRange(n, VectorOps.GRAIN / 4, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length()) {
                FloatVector v = FloatVector.fromArray(S, x, xo + i);
                FloatVector u = v.mul(v).mul(A * K).add(K).mul(v);
                v.mul(0.5f).mul(VectorMath.tanh(u).add(1f)).intoArray(out, oo + i);
            }
            for (; i < hi; i++) out[oo + i] = scalar(x[xo + i]);
        });
    }

    /** dx = dy · gelu'(x). */
    public static void backward(float[] dy, int dyo, float[] x, int xo, float[] dx, int dxo, int n) {
        Parallel.forRange(n, VectorOps.GRAIN / 4, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length()) {
                FloatVector v = FloatVector.fromArray(S, x, xo + i);
                FloatVector v2 = v.mul(v);
                FloatVector t = VectorMath.tanh(v2.mul(A * K).add(K).mul(v));
                FloatVector sech2 = t.mul(t).neg().add(1f);
                FloatVector du = v2.mul(3f * A * K).add(K);
                FloatVector g = t.add(1f).mul(0.5f).add(v.mul(0.5f).mul(sech2).mul(du));
                g.mul(FloatVector.fromArray(S, dy, dyo + i)).intoArray(dx, dxo + i);
            }
            for (; i < hi; i++) dx[dxo + i] = dy[dyo + i] * scalarGrad(x[xo + i]);
        });
    }

    public static float scalar(float x) {
        return (float) (0.5 * x * (1 + Math.tanh(K * (x + A * x * x * x))));
    }

    public static float scalarGrad(float x) {
        double t = Math.tanh(K * (x + A * x * x * x));
        return (float) (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * A * x * x));
    }
}
