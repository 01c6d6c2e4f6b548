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
     * row[0..len) := softmax(scale · row[0..len)); row[len..cols) := 0. In place. Each pass is one vector loop whose
     * last vector is masked to the prefix (lanes past len are neither read nor written by it), not a vector loop and
     * a scalar tail: at a causal row's average length of T/2 the scalar tail was a sixth of the exps, and one call site
     * of {@link VectorMath#exp} keeps the method small enough for C2 to inline it, with no boxed vectors.
     */
    public static void softmaxPrefix(float[] row, int ro, int len, int cols, float scale) {
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
     * Writes into dz (may alias dp); dz[len..cols) := 0. Vector loops with a masked last vector, as
     * {@link #softmaxPrefix}.
     */
    public static void softmaxPrefixBackward(float[] p, int po, float[] dp, int dpo, float[] dz, int dzo,
                                             int len, int cols, float scale) {
        int step = S.length(), end = (len + step - 1) / step * step;
        FloatVector acc = FloatVector.zero(S);
        for (int c = 0; c < end; c += step) { // masked lanes load as zero and add nothing
            VectorMask<Float> m = S.indexInRange(c, len);
            acc = FloatVector.fromArray(S, p, po + c, m).fma(FloatVector.fromArray(S, dp, dpo + c, m), acc);
        }
        FloatVector vdot = FloatVector.broadcast(S, VectorMath.sum(acc));
        for (int c = 0; c < end; c += step) {
            VectorMask<Float> m = S.indexInRange(c, len);
            FloatVector pv = FloatVector.fromArray(S, p, po + c, m);
            FloatVector.fromArray(S, dp, dpo + c, m).sub(vdot).mul(pv).mul(scale).intoArray(dz, dzo + c, m);
        }
        Arrays.fill(dz, dzo + len, dzo + cols, 0f);
    }
}
