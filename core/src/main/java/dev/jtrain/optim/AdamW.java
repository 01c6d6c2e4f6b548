package dev.jtrain.optim;

import dev.jtrain.tensor.kernel.AdamWKernel;

import java.util.List;

/**
 * AdamW (Loshchilov &amp; Hutter, decoupled weight decay) as an element-wise {@link Optimizer}. State: m and v, one
 * float each per parameter element (8 bytes per parameter, the "optimizer state" of the ZeRO paper's accounting).
 *
 * @param weightDecay applied to elements stepped with {@code decay} (nanoGPT's grouping: matrices only)
 */
public record AdamW(float beta1, float beta2, float eps, float weightDecay) implements Optimizer {
    private static final List<String> STATE = List.of("exp_avg", "exp_avg_sq");

    /** nanoGPT's GPT-2 settings. */
    public static AdamW gpt() { return new AdamW(0.9f, 0.95f, 1e-8f, 0.1f); }

    @Override public List<String> stateNames() { return STATE; }

    @Override
    public void step(float[] p, int pOff, float[] g, int gOff, float[][] state, int sOff, int n, float lr, boolean decay, int step) {
        step(p, pOff, g, gOff, state, sOff, n, lr, decay, step, 1f);
    }

    /** The clipping coefficient is applied as each gradient is read: the update's one pass over g is clipping's too. */
    @Override
    public void step(float[] p, int pOff, float[] g, int gOff, float[][] state, int sOff, int n, float lr, boolean decay,
                     int step, float gradScale) {
        AdamWKernel.step(p, pOff, g, gOff, state[0], sOff, state[1], sOff, n, lr, beta1, beta2, eps, decay ? weightDecay : 0f,
                step, gradScale);
    }
}
