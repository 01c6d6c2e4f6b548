package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/** Numerically stable softmax over a row prefix (the causal mask is "only the first len columns"). */
public final class SoftmaxKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private SoftmaxKernel() {}

    /**
     * row[0..len) := softmax(scale · row[0..len)); row[len..cols) := 0. In place. Where the row's last vector ends
     * within cols (every causal row of a model whose block size is a multiple of the vector length), the lanes past len
     * are set to -∞ first and each pass runs on whole vectors: they weigh nothing in the maximum, and their exponential
     * (clamped, below 1.2e-38) is lost in a sum that holds e^0 = 1. A per-vector mask cost a sixth of the kernel's time.
     * Otherwise the last vector is masked ({@link #softmaxPrefixMasked}). Both keep one call site of {@link
     * VectorMath#exp} in the loop that runs: with two, C2 stopped inlining it and boxed the vectors.
     */
    public static void softmaxPrefix(float[] row, int ro, int len, int cols, float scale) {
        int step = S.length(), end = (len + step - 1) / step * step;
        if (end > cols) {
            softmaxPrefixMasked(row, ro, len, cols, scale);
            return;
        }
        Arrays.fill(row, ro + len, ro + end, Float.NEGATIVE_INFINITY);
        FloatVector vmax = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        for (int c = 0; c < end; c += step) vmax = vmax.max(FloatVector.fromArray(S, row, ro + c));
        float sm = vmax.reduceLanes(VectorOperators.MAX) * scale;
        FloatVector vs = FloatVector.broadcast(S, scale), vsm = FloatVector.broadcast(S, -sm);
        FloatVector acc = FloatVector.zero(S);
        for (int c = 0; c < end; c += step) {
            FloatVector e = VectorMath.exp(FloatVector.fromArray(S, row, ro + c).fma(vs, vsm));
            acc = acc.add(e);
            e.intoArray(row, ro + c);
        }
        FloatVector inv = FloatVector.broadcast(S, 1f / VectorMath.sum(acc));
        for (int c = 0; c < end; c += step) FloatVector.fromArray(S, row, ro + c).mul(inv).intoArray(row, ro + c);
        Arrays.fill(row, ro + len, ro + cols, 0f);
    }

    /**
     * {@link #softmaxPrefix} for a row whose last vector would cross cols: each pass is one vector loop whose last
     * vector is masked to the prefix (lanes past len are neither read nor written), not a vector loop and a scalar
     * tail, which at a causal row's average length of T/2 took a sixth of the exps in scalar code.
     */
    static void softmaxPrefixMasked(float[] row, int ro, int len, int cols, float scale) {
        int step = S.length(), end = (len + step - 1) / step * step;
        FloatVector vmax = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        for (int c = 0; c < end; c += step) {
            VectorMask<Float> m = S.indexInRange(c, len);
            vmax = vmax.lanewise(VectorOperators.MAX, FloatVector.fromArray(S, row, ro + c, m), m);
        }
        float sm = vmax.reduceLanes(VectorOperators.MAX) * scale;
        FloatVector vs = FloatVector.broadcast(S, scale), vsm = FloatVector.broadcast(S, -sm);
        FloatVector acc = FloatVector.zero(S);
        for (int c = 0; c < end; c += step) {
            VectorMask<Float> m = S.indexInRange(c, len);
            FloatVector e = VectorMath.exp(FloatVector.fromArray(S, row, ro + c, m).fma(vs, vsm));
            acc = acc.add(e, m);
            e.intoArray(row, ro + c, m);
        }
        FloatVector inv = FloatVector.broadcast(S, 1f / VectorMath.sum(acc));
        for (int c = 0; c < end; c += step) {
            VectorMask<Float> m = S.indexInRange(c, len);
            FloatVector.fromArray(S, row, ro + c, m).mul(inv).intoArray(row, ro + c, m);
        }
        Arrays.fill(row, ro + len, ro + cols, 0f);
    }

    /**
     * Softmax backward over a row prefix: dz = p ⊙ (dp - Σ p·dp) · scale (scale from the pre-softmax scaling).
     * Writes into dz (may alias dp); dz[len..cols) := 0. Whole vectors, then the last one masked to the prefix (no
     * exponential here, so the loop body may be written twice).
     */
    public static void softmaxPrefixBackward(float[] p, int po, float[] dp, int dpo, float[] dz, int dzo,
                                             int len, int cols, float scale) {
        int step = S.length(), full = len / step * step;
        FloatVector acc = FloatVector.zero(S);
        for (int c = 0; c < full; c += step)
            acc = FloatVector.fromArray(S, p, po + c).fma(FloatVector.fromArray(S, dp, dpo + c), acc);
        // The tail mask is made where it is used, in each branch: one held in a variable that may be null is a phi
        // the JIT cannot scalar-replace, and it allocated a mask and its boolean[] on every row (half a million a step).
        boolean tail = full < len;
        if (tail) { // masked lanes load as zero and add nothing
            VectorMask<Float> last = S.indexInRange(full, len);
            acc = FloatVector.fromArray(S, p, po + full, last).fma(FloatVector.fromArray(S, dp, dpo + full, last), acc);
        }
        FloatVector vdot = FloatVector.broadcast(S, VectorMath.sum(acc));
        for (int c = 0; c < full; c += step) {
            FloatVector pv = FloatVector.fromArray(S, p, po + c);
            FloatVector.fromArray(S, dp, dpo + c).sub(vdot).mul(pv).mul(scale).intoArray(dz, dzo + c);
        }
        if (tail) {
            VectorMask<Float> last = S.indexInRange(full, len);
            FloatVector pv = FloatVector.fromArray(S, p, po + full, last);
            FloatVector.fromArray(S, dp, dpo + full, last).sub(vdot).mul(pv).mul(scale).intoArray(dz, dzo + full, last);
        }
        Arrays.fill(dz, dzo + len, dzo + cols, 0f);
    }
}
