package dev.jtrain.optim;

import dev.jtrain.tensor.kernel.VectorOps;

import java.util.List;

/**
 * An element-wise optimizer: it updates any flat range of parameters from the same range of gradients and its own
 * per-element state. That is all data parallelism needs: DDP steps every range, ZeRO steps only the rank's shard,
 * and checkpoints name state buffer i of parameter P {@code optimizer.<stateNames()[i]>.<P>} whatever the strategy,
 * so a new optimizer touches neither DDP, ZeRO nor the checkpoint.
 *
 * <p>Threading: stateless (hyper-parameters only); state lives in the caller's buffers.
 */
public interface Optimizer {
    /** Names of the per-element state buffers, in the order of {@link #newState}'s arrays (AdamW: exp_avg, exp_avg_sq). */
    List<String> stateNames();

    /** Zeroed state for {@code elements} elements: one array per {@link #stateNames() name}. */
    default float[][] newState(int elements) {
        float[][] s = new float[stateNames().size()][];
        for (int i = 0; i < s.length; i++) s[i] = new float[elements];
        return s;
    }

    /**
     * One update of {@code n} elements: parameters {@code p[pOff..pOff+n)} from gradients {@code g[gOff..)}, state
     * buffers at {@code sOff}.
     *
     * @param decay whether weight decay applies to these elements (matrices, not biases or norms)
     * @param step  the update's number, from 1 (bias corrections depend on it)
     */
    void step(float[] p, int pOff, float[] g, int gOff, float[][] state, int sOff, int n, float lr, boolean decay, int step);

    /**
     * As {@link #step(float[], int, float[], int, float[][], int, int, float, boolean, int) step}, from the gradients
     * times {@code gradScale} (clipping's coefficient, {@link GradClip#coefficient}; 1 for none). An optimizer that
     * reads each gradient once should fold the product into its update, as {@link AdamW} does, so that clipping costs
     * no pass over the gradients of its own; this default scales them in place first, which leaves {@code g} scaled.
     */
    default void step(float[] p, int pOff, float[] g, int gOff, float[][] state, int sOff, int n, float lr, boolean decay,
                      int step, float gradScale) {
        if (gradScale != 1f) VectorOps.scale(gradScale, g, gOff, g, gOff, n);
        step(p, pOff, g, gOff, state, sOff, n, lr, decay, step);
    }
}
