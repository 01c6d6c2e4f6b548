package dev.jtrain.optim;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.kernel.AdamWKernel;

/**
 * AdamW over a model's flat parameter buffer. Weight decay applies to matrices (dim ≥ 2: linear and embedding
 * weights) and not to biases and LayerNorm gains, nanoGPT's grouping.
 *
 * <p>State: m and v, one float each per parameter element (8 bytes per parameter, the "optimizer state" of the
 * ZeRO paper's accounting).
 */
public final class AdamW {
    /** Hyper-parameters; units: learning rate per step. */
    public record Options(float beta1, float beta2, float eps, float weightDecay) {
        public static Options gpt() {
            return new Options(0.9f, 0.95f, 1e-8f, 0.1f);
        }
    }

    private final FlatParameters params;
    private final Options options;
    private final float[] m;
    private final float[] v;
    private final boolean[] decay;
    private int step;

    public AdamW(FlatParameters params, Options options) {
        this.params = params;
        this.options = options;
        this.m = new float[params.size()];
        this.v = new float[params.size()];
        this.decay = new boolean[params.slots().size()];
        for (int i = 0; i < decay.length; i++) decay[i] = params.slots().get(i).param().dim() >= 2;
    }

    public void step(float lr) {
        step++;
        float[] p = params.data(), g = params.grad();
        var slots = params.slots();
        for (int i = 0; i < slots.size(); i++) {
            var s = slots.get(i);
            AdamWKernel.step(p, s.offset(), g, s.offset(), m, s.offset(), v, s.offset(), s.numel(), lr,
                    options.beta1(), options.beta2(), options.eps(), decay[i] ? options.weightDecay() : 0f, step);
        }
    }

    public int stepCount() { return step; }

    public float[] exp_avg() { return m; }

    public float[] exp_avg_sq() { return v; }

    /** Restores the step counter (from a checkpoint). */
    public void setStepCount(int step) { this.step = step; }

    public Options options() { return options; }
}
