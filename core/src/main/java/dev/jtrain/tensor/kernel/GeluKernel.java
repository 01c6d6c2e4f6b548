package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
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
     * out[lo, hi) from x[lo, hi), and gelu'(x) into {@code grad[go + i]} when grad is not null: whole vectors in
     * place, and a ragged end (fewer than a vector's lanes) copied into a zero-padded vector of its own and run through
     * the same loop. Every element takes the same lane-wise operations wherever the threads' ranges end, so the bits
     * do not depend on the thread count, and no vector needs a mask: computing one per vector took a sixth of the
     * kernel's time.
     */
    private static void forwardRange(float[] x, int xo, float[] out, int oo, int lo, int hi, float[] grad, int go) {
        int full = lo + S.loopBound(hi - lo);
        forwardVectors(x, xo, out, oo, lo, full, grad, go);
        if (full < hi) forwardRaggedEnd(x, xo, out, oo, full, hi, grad, go);
    }

    /** Three vectors' worth: the ragged end's x, gelu and gelu' (zero-padded; gelu(0) and gelu'(0) are finite). */
    private static final ThreadLocal<float[]> RAGGED = ThreadLocal.withInitial(() -> new float[3 * S.length()]);

    private static void forwardRaggedEnd(float[] x, int xo, float[] out, int oo, int lo, int hi, float[] grad, int go) {
        int n = hi - lo, l = S.length();
        float[] t = RAGGED.get();
        Arrays.fill(t, 0f);
        System.arraycopy(x, xo + lo, t, 0, n);
        forwardVectors(t, 0, t, l, 0, l, grad != null ? t : null, 2 * l);
        System.arraycopy(t, l, out, oo + lo, n);
        if (grad != null) System.arraycopy(t, 2 * l, grad, go + lo, n);
    }

    /**
     * Whole vectors [lo, hi) (a multiple of the vector length apart). The loop body is written once and the formula
     * is the short one below: with the body twice, or tanh and the derivative written out as tanh's, C2 stopped
     * inlining (its node-count cutoff) and boxed every vector, three times slower.
     *
     * <p>½(1 + tanh(u)) is the logistic function of 2u, h = e/(1 + e) with e = exp(2u) (no cancellation for
     * negative x, where 1 - 2/(e + 1) lost digits); gelu(x) = x·h and gelu'(x) = h + 2x·h(1 - h)·u',
     * u' = √(2/π)(1 + 3·0.044715x²).
     */
    private static void forwardVectors(float[] x, int xo, float[] out, int oo, int lo, int hi, float[] grad, int go) {
        for (int i = lo; i < hi; i += S.length()) {
            FloatVector v = FloatVector.fromArray(S, x, xo + i);
            FloatVector v2 = v.mul(v);
            FloatVector e = VectorMath.exp(v2.mul(A * K).add(K).mul(v).mul(2f));
            FloatVector h = e.div(e.add(1f));
            v.mul(h).intoArray(out, oo + i);
            if (grad != null) {
                FloatVector du = v2.mul(3f * A * K).add(K);
                h.sub(h.mul(h)).mul(v.add(v)).fma(du, h).intoArray(grad, go + i);
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
