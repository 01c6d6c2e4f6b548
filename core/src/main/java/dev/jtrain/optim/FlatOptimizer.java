package dev.jtrain.optim;

import dev.jtrain.nn.FlatParameters;

/**
 * An {@link Optimizer} over a model's whole flat parameter buffer, with its state and step count: what one process,
 * or each DDP replica, steps. Weight decay applies to matrices (dim ≥ 2: linear and embedding weights) and not to
 * biases and LayerNorm gains, nanoGPT's grouping.
 */
public final class FlatOptimizer {
    private final FlatParameters params;
    private final Optimizer optimizer;
    private final float[][] state;
    private final boolean[] decay;
    private int step;

    public FlatOptimizer(FlatParameters params, Optimizer optimizer) {
        this.params = params;
        this.optimizer = optimizer;
        this.state = optimizer.newState(params.size());
        this.decay = new boolean[params.slots().size()];
        for (int i = 0; i < decay.length; i++) decay[i] = params.slots().get(i).param().dim() >= 2;
    }

    public void step(float lr) {
        step(lr, 1f);
    }

    /** One update from the gradients times {@code gradScale} (clipping's coefficient, {@link GradClip#coefficient}). */
    public void step(float lr, float gradScale) {
        step++;
        float[] p = params.data(), g = params.grad();
        var slots = params.slots();
        for (int i = 0; i < slots.size(); i++) {
            var s = slots.get(i);
            optimizer.step(p, s.offset(), g, s.offset(), state, s.offset(), s.numel(), lr, decay[i], step, gradScale);
        }
    }

    public Optimizer optimizer() { return optimizer; }

    /** The state buffers, one per {@link Optimizer#stateNames() name}, each as long as the parameter buffer. */
    public float[][] state() { return state; }

    public int stepCount() { return step; }

    /** Restores the step counter (from a checkpoint). */
    public void setStepCount(int step) { this.step = step; }
}
