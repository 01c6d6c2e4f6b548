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
        if (g != null) {
            Tensor cur = leaf.grad();
            Tensor gc = g.contiguous();
            if (cur == null) {
                leaf.setGrad(Tensor.of(gc.toArray(), leaf.shape())); // heap, not a step arena: grads outlive the step
            } else {
                if (!cur.isContiguous()) throw new IllegalStateException("grad of " + leaf + " is not contiguous");
                VectorOps.axpy(1f, gc.data(), gc.offset(), cur.data(), cur.offset(), cur.numel());
            }
        }
        for (Consumer<Tensor> hook : leaf.postAccumulateGradHooks()) hook.accept(leaf);
        return new Tensor[0];
    }

    /**
     * Adds one contribution into the leaf's gradient as it arrives, when the leaf has a gradient to add into; the
     * engine then runs this node with no gradient, for the hooks only, once every contribution is in. A leaf used
     * several times (a tied embedding and head) so never has its contributions held, and summed into a third array,
     * before they reach it: for a GPT-2-sized vocabulary that is two vocabulary x width arrays less at the end of
     * backward. Returns false (nothing done) when the leaf has no gradient yet.
     */
    boolean accumulateNow(Tensor g) {
        Tensor cur = leaf.grad();
        if (cur == null) return false;
        if (!cur.isContiguous()) throw new IllegalStateException("grad of " + leaf + " is not contiguous");
        Tensor gc = g.contiguous();
        VectorOps.axpy(1f, gc.data(), gc.offset(), cur.data(), cur.offset(), cur.numel());
        return true;
    }

    @Override
    public String name() {
        return "AccumulateGrad(" + (leaf.name() != null ? leaf.name() : "leaf") + ")";
    }
}
