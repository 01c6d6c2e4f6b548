package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.function.UnaryOperator;

/**
 * Activation checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"): run a block
 * without recording its graph, keep only its input, and recompute the block with grad enabled during backward.
 * The generator's state is saved before the forward and restored for the recompute, so dropout draws the same
 * masks, and the recompute runs in the forward's {@link Autocast} precision, so it reproduces the forward exactly.
 * Recompute adds roughly one extra forward per block to backward.
 *
 * <p>Limitation (as torch's reentrant checkpoint): parameters used inside the block must not also be used
 * outside it in the same graph, since the block's nested backward finalises their gradients.
 */
public final class Checkpoint {
    private Checkpoint() {}

    public static Tensor apply(UnaryOperator<Tensor> block, Tensor input, Rng rng) {
        if (!GradMode.isEnabled()) return block.apply(input);
        long rngState = rng == null ? 0 : rng.state();
        var precision = Autocast.precision();
        Tensor out;
        try (var g = GradMode.noGrad()) {
            out = block.apply(input);
        }
        Tensor result = out.detach();
        var node = new Node(input) {
            Saved kept;

            @Override
            protected Tensor[] apply(Tensor gradOut) {
                long resume = rng == null ? 0 : rng.state();
                if (rng != null) rng.setState(rngState);
                Tensor x = kept.get().detach().requiresGrad(true);
                Tensor y;
                try (var en = GradMode.enableGrad(); var ac = Autocast.with(precision)) {
                    y = block.apply(x);
                }
                if (y.gradFn() == null && !y.requiresGrad())
                    throw new IllegalStateException("checkpointed block produced an output that does not require grad");
                Engine.backward(y, gradOut);
                if (y.data() != x.data()) y.release(); // the recomputed output: its backward has run
                if (rng != null) rng.setState(resume);
                return new Tensor[]{x.grad()};
            }

            @Override
            public String name() { return "CheckpointBackward"; }
        };
        node.kept = node.save(input, false); // fp32: the recompute must see exactly the forward's input
        result.setGradFn(node);
        return result;
    }
}
