package dev.jtrain.autograd;

import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.VectorOps;

import java.util.function.Consumer;

/**
 * The sink for a leaf tensor's gradient. The engine runs it only after every path into the leaf has delivered
 * its contribution, so when it adds into {@code leaf.grad} that gradient is final for this backward: the right
 * moment for post-accumulate-grad hooks. It has the highest priority so hooks fire as early as possible.
 */
public final class AccumulateGrad extends Node {
    private final Tensor leaf;

    public AccumulateGrad(Tensor leaf) {
        super();
        this.leaf = leaf;
    }

    public Tensor leaf() {
        return leaf;
    }

    @Override
    long priority() {
        return Long.MAX_VALUE;
    }

    @Override
    protected Tensor[] apply(Tensor g) {
        Tensor cur = leaf.grad();
        Tensor gc = g.contiguous();
        if (cur == null) {
            leaf.setGrad(Tensor.of(gc.toArray(), leaf.shape())); // heap, not a step arena: grads outlive the step
        } else {
            if (!cur.isContiguous()) throw new IllegalStateException("grad of " + leaf + " is not contiguous");
            VectorOps.axpy(1f, gc.data(), gc.offset(), cur.data(), cur.offset(), cur.numel());
        }
        for (Consumer<Tensor> hook : leaf.postAccumulateGradHooks()) hook.accept(leaf);
        return new Tensor[0];
    }

    @Override
    public String name() {
        return "AccumulateGrad(" + (leaf.name() != null ? leaf.name() : "leaf") + ")";
    }
}
