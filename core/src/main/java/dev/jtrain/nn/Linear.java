package dev.jtrain.nn;

import dev.jtrain.autograd.F;
import dev.jtrain.tensor.Tensor;

/** y = x·Wᵀ + b, W of shape (out, in) as in torch.nn.Linear. */
public final class Linear extends Module {
    public final Tensor weight;
    public final Tensor bias;

    public Linear(Tensor weight, Tensor bias) {
        this.weight = registerParameter("weight", weight);
        this.bias = bias == null ? null : registerParameter("bias", bias);
    }

    public Tensor forward(Tensor x) {
        return F.linear(x, weight, bias);
    }
}
