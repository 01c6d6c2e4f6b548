package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
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
        step(p, po, g, go, m, mo, v, vo, n, lr, beta1, beta2, eps, weightDecay, t, 1f);
    }

    /**
     * As {@link #step(float[], int, float[], int, float[], int, float[], int, int, float, float, float, float, float,
     * int) step}, from the gradients times {@code gradScale} (gradient clipping's coefficient), multiplied as each is
     * read: the same single rounding as scaling the buffer first, without that pass (a read and a write of every
     * gradient). {@code g} is left as it was.
     */
    public static void step(float[] p, int po, float[] g, int go, float[] m, int mo, float[] v, int vo, int n,
                            float lr, float beta1, float beta2, float eps, float weightDecay, int t, float gradScale) {
        float bc1 = (float) (1 - Math.pow(beta1, t));
        float bc2 = (float) (1 - Math.pow(beta2, t));
        float decay = 1f - lr * weightDecay;
        Parallel.forRange(n, VectorOps.GRAIN, (lo, hi) -> {
            // the last partial vector is a masked one, not a scalar loop: every element takes the same operations
            // wherever a thread's range or a rank's shard ends, so the bits depend on neither
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length()) {
                update(FloatVector.fromArray(S, p, po + i), FloatVector.fromArray(S, g, go + i).mul(gradScale),
                        FloatVector.fromArray(S, m, mo + i), FloatVector.fromArray(S, v, vo + i),
                        beta1, beta2, bc1, bc2, eps, lr, decay, p, po + i, m, mo + i, v, vo + i, null);
            }
            if (i < hi) {
                VectorMask<Float> k = S.indexInRange(i, hi);
                update(FloatVector.fromArray(S, p, po + i, k), FloatVector.fromArray(S, g, go + i, k).mul(gradScale),
                        FloatVector.fromArray(S, m, mo + i, k), FloatVector.fromArray(S, v, vo + i, k),
                        beta1, beta2, bc1, bc2, eps, lr, decay, p, po + i, m, mo + i, v, vo + i, k);
            }
        });
    }

    private static void update(FloatVector pv, FloatVector gv, FloatVector m0, FloatVector v0, float beta1, float beta2,
                               float bc1, float bc2, float eps, float lr, float decay,
                               float[] p, int pi, float[] m, int mi, float[] v, int vi, VectorMask<Float> k) {
        FloatVector mv = m0.mul(beta1).add(gv.mul(1f - beta1));
        FloatVector vv = v0.mul(beta2).add(gv.mul(gv).mul(1f - beta2));
        FloatVector denom = vv.div(bc2).lanewise(VectorOperators.SQRT).add(eps);
        FloatVector upd = mv.div(bc1).div(denom);
        FloatVector pn = pv.mul(decay).sub(upd.mul(lr));
        if (k == null) {
            mv.intoArray(m, mi);
            vv.intoArray(v, vi);
            pn.intoArray(p, pi);
        } else {
            mv.intoArray(m, mi, k);
            vv.intoArray(v, vi, k);
            pn.intoArray(p, pi, k);
        }
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
