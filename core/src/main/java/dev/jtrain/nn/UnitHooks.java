package dev.jtrain.nn;

import dev.jtrain.autograd.F;
import dev.jtrain.tensor.Tensor;

import java.util.function.UnaryOperator;

/**
 * Calls a model makes around each of its {@link ShardedModel#units() units}, forward and backward, so that a fully
 * sharded strategy (ZeRO-3 / FSDP) can gather a unit's parameters just before they are used and free them after,
 * as FSDP's pre- and post-forward and -backward hooks do. Backward calls come from marker nodes in the graph (see
 * {@link #around}), so they fire when the engine reaches the unit, whichever thread runs the backward.
 *
 * <p>{@link #ROOT} stands for the parameters that belong to no unit (embeddings, the tied head, the final norm):
 * the model calls {@code beforeForward(ROOT)} once at the start of every forward.
 */
public interface UnitHooks {
    int ROOT = -1;

    void beforeForward(int unit);

    void afterForward(int unit);

    /** The gradient reached the unit's output: its backward is about to run. */
    void beforeBackward(int unit);

    /** The unit's backward has run: every gradient of its parameters is final for this backward. */
    void afterBackward(int unit);

    /**
     * {@code body(x)} as unit {@code unit}, with {@code hooks} (may be null: just the body) called before and after
     * its forward, and marker nodes at its input and output that call the backward hooks.
     */
    static Tensor around(UnitHooks hooks, int unit, Tensor x, UnaryOperator<Tensor> body) {
        if (hooks == null) return body.apply(x);
        Tensor in = F.backwardMarker(x, () -> hooks.afterBackward(unit));
        hooks.beforeForward(unit);
        Tensor out = body.apply(in);
        hooks.afterForward(unit);
        return F.backwardMarker(out, () -> hooks.beforeBackward(unit));
    }
}
