package dev.jtrain.gpt;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * GPT-2's initialisation of the weight matrices: N(0, σ²) from one generator, in the order the tensors are made,
 * drawn at once or later. A run that will load a checkpoint builds its model without drawing, as PyTorch users build
 * on the meta device before {@code load_state_dict}: the draw costs about 12 ns per parameter on one thread (1.6 s
 * for GPT-2 124M, 9 s for GPT-2-large), all of it overwritten by the load. Deferred or not, the values are the same:
 * {@link #draw} replays the draws in the order the tensors were made, and writes each through the tensor's current
 * storage (a flat parameter buffer may have taken it over meanwhile).
 */
final class WeightInit {
    private final long seed;
    private final List<Tensor> tensors = new ArrayList<>();
    private final List<Float> stds = new ArrayList<>();
    private boolean pending = true;

    WeightInit(long seed) {
        this.seed = seed;
    }

    /** A zero tensor of {@code shape} that {@link #draw} fills from N(0, std²). */
    Tensor normal(float std, int... shape) {
        if (!pending) throw new IllegalStateException("weights already drawn or discarded");
        Tensor t = Tensor.zeros(shape);
        tensors.add(t);
        stds.add(std);
        return t;
    }

    /** Fills every tensor made by {@link #normal}, as {@code Tensor.randn} on one generator would have. Once. */
    void draw() {
        if (!pending) return;
        Rng rng = new Rng(seed);
        for (int i = 0; i < tensors.size(); i++) {
            Tensor t = tensors.get(i);
            float[] d = t.data();
            int o = t.offset(), n = t.numel();
            double std = stds.get(i);
            for (int j = 0; j < n; j++) d[o + j] = (float) (rng.nextGaussian() * std);
        }
        discard();
    }

    /** Forgets the pending draws: the weights came from elsewhere (a checkpoint). */
    void discard() {
        pending = false;
        tensors.clear();
        stds.clear();
    }

    boolean pending() { return pending; }
}
