package dev.jtrain.optim;

import dev.jtrain.tensor.kernel.VectorOps;

/** Gradient clipping by global L2 norm (Pascanu et al. 2013), over a flat gradient buffer. */
public final class GradClip {
    private GradClip() {}

    /** Scales grad so its L2 norm is at most maxNorm; returns the norm before clipping. maxNorm ≤ 0 only measures. */
    public static float clipByGlobalNorm(float[] grad, float maxNorm) {
        float norm = (float) Math.sqrt(VectorOps.sumSquares(grad, 0, grad.length));
        if (maxNorm > 0 && norm > maxNorm) {
            float s = maxNorm / (norm + 1e-6f);
            VectorOps.scale(s, grad, 0, grad, 0, grad.length);
        }
        return norm;
    }
}
