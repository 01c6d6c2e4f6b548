package dev.jtrain.nn;

import dev.jtrain.autograd.F;
import dev.jtrain.tensor.Tensor;

/** LayerNorm over the last dimension; weight starts at 1, bias at 0 (or no bias). */
public final class LayerNorm extends Module {
    public static final float EPS = 1e-5f;
    public final Tensor weight;
    public final Tensor bias;

    public LayerNorm(int dim, boolean bias) {
        this.weight = registerParameter("weight", Tensor.full(1f, dim));
        this.bias = bias ? registerParameter("bias", Tensor.zeros(dim)) : null;
    }

    public Tensor forward(Tensor x) {
        return F.layerNorm(x, weight, bias, EPS);
    }
}
