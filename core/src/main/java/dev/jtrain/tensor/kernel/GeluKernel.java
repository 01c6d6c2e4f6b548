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

    /** Floats per piece of the bf16 forward and backward: 16 KiB, in L1. */
    private static final int PIECE = 4096;
    private static final ThreadLocal<float[]> PIECE_BUFFER = ThreadLocal.withInitial(() -> new float[PIECE]);

    /** out = gelu(x), for a forward without backward (evaluation, no grad). */
    public static void forward(float[] x, int xo, float[] out, int oo, int n) {
        Parallel.forRange(n, VectorOps.GRAIN / 4, (lo, hi) -> forwardRange(x, xo, out, oo, lo, hi, null, 0));
    }

    /**
     * out = gelu(x), and {@code grad[go, go + n)} = gelu'(x) for backward, which is then one multiply: the derivative
     * shares the forward's tanh, where computing it in backward from a saved x took a second tanh per element (the
     * costliest part of both passes). The kept derivative has x's size, so backward holds no more than before, and
     * its bits are those the backward computed from x.
     */
    public static void forward(float[] x, int xo, float[] out, int oo, int n, float[] grad, int go) {
        Parallel.forRange(n, VectorOps.GRAIN / 4, (lo, hi) -> forwardRange(x, xo, out, oo, lo, hi, grad, go));
    }

    /**
     * As {@link #forward(float[], int, float[], int, int, float[], int)}, keeping gelu'(x) rounded to bf16 in
     * {@code keep} ({@link Bf16#pack}'s layout, {@link Bf16#packedWords}(n) words), one cache-sized piece at a time.
     * Autocast keeps GELU's input (a bf16 linear's output) in bf16; the derivative at bf16 has the same relative
     * error as the derivative of an input rounded to bf16, and half of fp32's bytes.
     */
    public static void forward(float[] x, int xo, float[] out, int oo, int n, int[] keep) {
        Parallel.forRange((n + PIECE - 1) / PIECE, Math.max(1, VectorOps.GRAIN / 4 / PIECE), (lo, hi) -> {
            float[] g = PIECE_BUFFER.get();
            for (int c = lo; c < hi; c++) {
                int from = c * PIECE, to = Math.min(n, from + PIECE);
                forwardRange(x, xo, out, oo, from, to, g, -from);
                Bf16.pack(g, 0, to - from, keep, from / 2); // PIECE is a multiple of the packing block
            }
        });
    }

    /**
     * out[lo, hi) from x[lo, hi), and gelu'(x) into {@code grad[go + i]} when grad is not null. The last partial
     * vector is a masked one, not a scalar loop: every element takes the same operations wherever the threads'
     * ranges end, so the bits do not depend on the thread count. Whole vectors and the masked last one share one
     * loop body, and the formula is the short one below: with the body twice, or tanh and the derivative written
     * out as tanh's, C2 stopped inlining (its node-count cutoff) and boxed every vector, three times slower.
     *
     * <p>½(1 + tanh(u)) is the logistic function of 2u, h = e/(1 + e) with e = exp(2u) (no cancellation for
     * negative x, where 1 - 2/(e + 1) lost digits); gelu(x) = x·h and gelu'(x) = h + 2x·h(1 - h)·u',
     * u' = √(2/π)(1 + 3·0.044715x²).
     */
    private static void forwardRange(float[] x, int xo, float[] out, int oo, int lo, int hi, float[] grad, int go) {
        for (int i = lo; i < hi; i += S.length()) {
            VectorMask<Float> m = S.indexInRange(i, hi);
            FloatVector v = FloatVector.fromArray(S, x, xo + i, m);
            FloatVector v2 = v.mul(v);
            FloatVector e = VectorMath.exp(v2.mul(A * K).add(K).mul(v).mul(2f));
            FloatVector h = e.div(e.add(1f));
            v.mul(h).intoArray(out, oo + i, m);
            if (grad != null) {
                FloatVector du = v2.mul(3f * A * K).add(K);
                h.sub(h.mul(h)).mul(v.add(v)).fma(du, h).intoArray(grad, go + i, m);
            }
        }
    }

    /** dx = dy · gelu'(x), from the derivative the forward kept in fp32 (at {@code grad[go]}). */
    public static void backward(float[] dy, int dyo, float[] grad, int go, float[] dx, int dxo, int n) {
        VectorOps.mul(dy, dyo, grad, go, dx, dxo, n);
    }

    /**
     * dx = dy · gelu'(x), from the derivative the forward kept in bf16 ({@link #forward(float[], int, float[], int,
     * int, int[])}), widened one piece at a time into a buffer that stays in cache.
     */
    public static void backward(float[] dy, int dyo, int[] gradBf16, float[] dx, int dxo, int n) {
        Parallel.forRange((n + PIECE - 1) / PIECE, Math.max(1, VectorOps.GRAIN / 4 / PIECE), (lo, hi) -> {
            float[] g = PIECE_BUFFER.get();
            for (int c = lo; c < hi; c++) {
                int from = c * PIECE, to = Math.min(n, from + PIECE);
                Bf16.unpack(gradBf16, n, from, to - from, g, 0);
                VectorOps.mul(dy, dyo + from, g, 0, dx, dxo + from, to - from);
            }
        });
    }

    /** The reference: GPT-2's formula in double. */
    public static float scalar(float x) {
        return (float) (0.5 * x * (1 + Math.tanh(K * (x + A * x * x * x))));
    }

    public static float scalarGrad(float x) {
        double t = Math.tanh(K * (x + A * x * x * x));
        return (float) (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * A * x * x));
    }
}
