package dev.jtrain.nn;

import dev.jtrain.autograd.F;
import dev.jtrain.tensor.Tensor;

/** Lookup table (num, dim). */
public final class Embedding extends Module {
    public final Tensor weight;

    public Embedding(Tensor weight) {
        this.weight = registerParameter("weight", weight);
    }

    public Tensor forward(int[] ids, int... idShape) {
        return F.embedding(weight, ids, idShape);
    }
}
