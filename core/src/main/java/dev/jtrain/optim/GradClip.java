package dev.jtrain.optim;

import dev.jtrain.tensor.kernel.VectorOps;

/** Gradient clipping by global L2 norm (Pascanu et al. 2013), over a flat gradient buffer. */
public final class GradClip {
    private GradClip() {}

    /** The L2 norm of the whole buffer. */
    public static float globalNorm(float[] grad) {
        return (float) Math.sqrt(VectorOps.sumSquares(grad, 0, grad.length));
    }

    /**
     * What gradients of global norm {@code norm} are multiplied by to clip them to {@code maxNorm}: 1 when they are
     * within it or clipping is off (maxNorm ≤ 0). Strategies hand it to {@link Optimizer#step(float[], int, float[],
     * int, float[][], int, int, float, boolean, int, float)} rather than scaling the buffer themselves.
     */
    public static float coefficient(float norm, float maxNorm) {
        return maxNorm > 0 && norm > maxNorm ? maxNorm / (norm + 1e-6f) : 1f;
    }
}
