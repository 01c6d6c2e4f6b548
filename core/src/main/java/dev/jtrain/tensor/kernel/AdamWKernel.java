package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * AdamW update over a contiguous range (Loshchilov &amp; Hutter 2019, decoupled weight decay):
 * m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²; p -= lr·(m̂/(√v̂ + ε) + λ·p), with bias corrections
 * m̂ = m/(1-β1^t), v̂ = v/(1-β2^t). Working on ranges is what lets ZeRO step only its own shard.
 */
public final class AdamWKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private AdamWKernel() {}

    public static void step(float[] p, int po, float[] g, int go, float[] m, int mo, float[] v, int vo, int n,
                            float lr, float beta1, float beta2, float eps, float weightDecay, int t) {
        float bc1 = (float) (1 - Math.pow(beta1, t));
        float bc2 = (float) (1 - Math.pow(beta2, t));
        float decay = 1f - lr * weightDecay;
        Parallel.forRange(n, VectorOps.GRAIN, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length()) {
                FloatVector gv = FloatVector.fromArray(S, g, go + i);
                FloatVector mv = FloatVector.fromArray(S, m, mo + i).mul(beta1).add(gv.mul(1f - beta1));
                FloatVector vv = FloatVector.fromArray(S, v, vo + i).mul(beta2).add(gv.mul(gv).mul(1f - beta2));
                mv.intoArray(m, mo + i);
                vv.intoArray(v, vo + i);
                FloatVector denom = vv.div(bc2).lanewise(VectorOperators.SQRT).add(eps);
                FloatVector upd = mv.div(bc1).div(denom);
                FloatVector.fromArray(S, p, po + i).mul(decay).sub(upd.mul(lr)).intoArray(p, po + i);
            }
            for (; i < hi; i++) {
                float gi = g[go + i];
                float mi = m[mo + i] = beta1 * m[mo + i] + (1 - beta1) * gi;
                float vi = v[vo + i] = beta2 * v[vo + i] + (1 - beta2) * gi * gi;
                p[po + i] = p[po + i] * decay - lr * (mi / bc1) / ((float) Math.sqrt(vi / bc2) + eps);
            }
        });
    }

    /** Scalar reference in double, the oracle for tests. */
    public static void reference(float[] p, float[] g, float[] m, float[] v, int n, float lr, float beta1,
                                 float beta2, float eps, float weightDecay, int t) {
        double bc1 = 1 - Math.pow(beta1, t), bc2 = 1 - Math.pow(beta2, t);
        for (int i = 0; i < n; i++) {
            double mi = beta1 * (double) m[i] + (1 - beta1) * (double) g[i];
            double vi = beta2 * (double) v[i] + (1 - beta2) * (double) g[i] * g[i];
            m[i] = (float) mi;
            v[i] = (float) vi;
            p[i] = (float) (p[i] - lr * weightDecay * (double) p[i] - lr * (mi / bc1) / (Math.sqrt(vi / bc2) + eps));
        }
    }
}
