package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
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

    /** Floats per piece of {@link #forward} with a bf16 copy and of {@link #backward} from one: 16 KiB, in L1. */
    private static final int PIECE = 4096;
    private static final ThreadLocal<float[]> WIDENED = ThreadLocal.withInitial(() -> new float[PIECE]);

    public static void forward(float[] x, int xo, float[] out, int oo, int n) {
        Parallel.forRange(n, VectorOps.GRAIN / 4, (lo, hi) -> forwardRange(x, xo, out, oo, lo, hi));
    }

    /**
     * {@link #forward}, also storing x rounded to bf16 into {@code keep} ({@link Bf16#pack}'s layout, {@link
     * Bf16#packedWords}(n) words) for a backward that reads it so: piece by piece while each piece is in cache, where
     * packing it afterwards would read all of x from memory again.
     */
    public static void forward(float[] x, int xo, float[] out, int oo, int n, int[] keep) {
        Parallel.forRange((n + PIECE - 1) / PIECE, Math.max(1, VectorOps.GRAIN / 4 / PIECE), (lo, hi) -> {
            for (int c = lo; c < hi; c++) {
                int from = c * PIECE, to = Math.min(n, from + PIECE);
                forwardRange(x, xo, out, oo, from, to);
                Bf16.pack(x, xo + from, to - from, keep, from / 2); // PIECE is a multiple of the packing block
            }
        });
    }

    /**
     * out[lo, hi) from x[lo, hi). The last partial vector is a masked one, not a scalar loop: every element takes the same
     * operations wherever the threads' ranges end, so the bits do not depend on the thread count.
     */
    private static void forwardRange(float[] x, int xo, float[] out, int oo, int lo, int hi) {
        int i = lo, upper = lo + S.loopBound(hi - lo);
        for (; i < upper; i += S.length()) forward(FloatVector.fromArray(S, x, xo + i)).intoArray(out, oo + i);
        if (i < hi) {
            VectorMask<Float> m = S.indexInRange(i, hi);
            forward(FloatVector.fromArray(S, x, xo + i, m)).intoArray(out, oo + i, m);
        }
    }

    private static FloatVector forward(FloatVector v) {
        FloatVector u = v.mul(v).mul(A * K).add(K).mul(v);
        return v.mul(0.5f).mul(VectorMath.tanh(u).add(1f));
    }

    /** dx = dy · gelu'(x). */
    public static void backward(float[] dy, int dyo, float[] x, int xo, float[] dx, int dxo, int n) {
        Parallel.forRange(n, VectorOps.GRAIN / 4, (lo, hi) -> backwardRange(dy, dyo, x, xo, dx, dxo, lo, hi));
    }

    /**
     * {@link #backward} with x read from its bf16 copy ({@link #forward(float[], int, float[], int, int, int[])}),
     * widened a cache-sized piece at a time: the same values as widening all of it first, without writing and reading
     * back an fp32 copy.
     */
    public static void backward(float[] dy, int dyo, int[] xBf16, float[] dx, int dxo, int n) {
        Parallel.forRange((n + PIECE - 1) / PIECE, Math.max(1, VectorOps.GRAIN / 4 / PIECE), (lo, hi) -> {
            float[] x = WIDENED.get();
            for (int c = lo; c < hi; c++) {
                int from = c * PIECE, to = Math.min(n, from + PIECE);
                Bf16.unpack(xBf16, n, from, to - from, x, 0);
                backwardRange(dy, dyo, x, -from, dx, dxo, from, to);
            }
        });
    }

    /** dx[lo, hi) from dy[lo, hi) and x, whose element i is at {@code x[xo + i]}; the last vector masked, as forward. */
    private static void backwardRange(float[] dy, int dyo, float[] x, int xo, float[] dx, int dxo, int lo, int hi) {
        int i = lo, upper = lo + S.loopBound(hi - lo);
        for (; i < upper; i += S.length()) {
            grad(FloatVector.fromArray(S, x, xo + i)).mul(FloatVector.fromArray(S, dy, dyo + i)).intoArray(dx, dxo + i);
        }
        if (i < hi) {
            VectorMask<Float> m = S.indexInRange(i, hi);
            grad(FloatVector.fromArray(S, x, xo + i, m)).mul(FloatVector.fromArray(S, dy, dyo + i, m)).intoArray(dx, dxo + i, m);
        }
    }

    /** gelu'(v). */
    private static FloatVector grad(FloatVector v) {
        FloatVector v2 = v.mul(v);
        FloatVector t = VectorMath.tanh(v2.mul(A * K).add(K).mul(v));
        FloatVector sech2 = t.mul(t).neg().add(1f);
        FloatVector du = v2.mul(3f * A * K).add(K);
        return t.add(1f).mul(0.5f).add(v.mul(0.5f).mul(sech2).mul(du));
    }

    public static float scalar(float x) {
        return (float) (0.5 * x * (1 + Math.tanh(K * (x + A * x * x * x))));
    }

    public static float scalarGrad(float x) {
        double t = Math.tanh(K * (x + A * x * x * x));
        return (float) (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * A * x * x));
    }
}
