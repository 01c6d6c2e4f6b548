package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/** Numerically stable softmax over a row prefix (the causal mask is "only the first len columns"). */
public final class SoftmaxKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private SoftmaxKernel() {}

    /**
     * row[0..len) := softmax(scale · row[0..len)); row[len..cols) := 0. Returns nothing; in place.
     */
    public static void softmaxPrefix(float[] row, int ro, int len, int cols, float scale) {
        int upper = S.loopBound(len);
        int c = 0;
        FloatVector vmax = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        for (; c < upper; c += S.length()) vmax = vmax.max(FloatVector.fromArray(S, row, ro + c));
        float max = vmax.reduceLanes(VectorOperators.MAX);
        for (; c < len; c++) max = Math.max(max, row[ro + c]);
        float sm = max * scale;
        FloatVector vs = FloatVector.broadcast(S, scale), vsm = FloatVector.broadcast(S, sm);
        FloatVector acc = FloatVector.zero(S);
        for (c = 0; c < upper; c += S.length()) {
            FloatVector e = VectorMath.exp(FloatVector.fromArray(S, row, ro + c).fma(vs, vsm.neg()));
            acc = acc.add(e);
            e.intoArray(row, ro + c);
        }
        float sum = VectorMath.sum(acc);
        for (; c < len; c++) {
            float e = VectorMath.exp(Math.fma(row[ro + c], scale, -sm));
            row[ro + c] = e;
            sum += e;
        }
        float inv = 1f / sum;
        for (c = 0; c < upper; c += S.length()) FloatVector.fromArray(S, row, ro + c).mul(inv).intoArray(row, ro + c);
        for (; c < len; c++) row[ro + c] *= inv;
        Arrays.fill(row, ro + len, ro + cols, 0f);
    }

    /**
     * Softmax backward over a row prefix: dz = p ⊙ (dp - Σ p·dp) · scale (scale from the pre-softmax scaling).
     * Writes into dz (may alias dp).
     */
    public static void softmaxPrefixBackward(float[] p, int po, float[] dp, int dpo, float[] dz, int dzo,
                                             int len, int cols, float scale) {
        int upper = S.loopBound(len);
        int c = 0;
        FloatVector acc = FloatVector.zero(S);
        for (; c < upper; c += S.length())
            acc = FloatVector.fromArray(S, p, po + c).fma(FloatVector.fromArray(S, dp, dpo + c), acc);
        float dot = VectorMath.sum(acc);
        for (; c < len; c++) dot += p[po + c] * dp[dpo + c];
        FloatVector vdot = FloatVector.broadcast(S, dot);
        for (c = 0; c < upper; c += S.length()) {
            FloatVector pv = FloatVector.fromArray(S, p, po + c);
            FloatVector.fromArray(S, dp, dpo + c).sub(vdot).mul(pv).mul(scale).intoArray(dz, dzo + c);
        }
        for (; c < len; c++) dz[dzo + c] = p[po + c] * (dp[dpo + c] - dot) * scale;
        Arrays.fill(dz, dzo + len, dzo + cols, 0f);
    }
}
