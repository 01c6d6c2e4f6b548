package dev.jtrain.gpt;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * GPT-2's initialisation of the weight matrices: N(0, σ²) from one generator, in the order the tensors are made,
 * drawn at once or later. A run that will load a checkpoint builds its model without drawing, as PyTorch users build
 * on the meta device before {@code load_state_dict}: Box-Muller on one thread costs seconds for a real model, all of
 * it overwritten by the load (bench/MEASUREMENTS.md, "Where a restarted rank's time goes"). Deferred or not, the
 * values are the same: {@link #draw} replays the draws in the order the tensors were made, and writes each through
 * the tensor's current storage (a flat parameter buffer may have taken it over meanwhile).
 */
final class WeightInit {
    private final long seed;
    private final List<Draw> draws = new ArrayList<>();
    private boolean pending = true;

    /** A weight matrix and the deviation of its draw. */
    private record Draw(Tensor tensor, float std) {}

    WeightInit(long seed) {
        this.seed = seed;
    }

    /** A zero tensor of {@code shape} that {@link #draw} fills from N(0, std²). */
    Tensor normal(float std, int... shape) {
        if (!pending) throw new IllegalStateException("weights already drawn or discarded");
        Tensor t = Tensor.zeros(shape);
        draws.add(new Draw(t, std));
        return t;
    }

    /** Fills every tensor made by {@link #normal} from one generator, in the order they were made. Once. */
    void draw() {
        if (!pending) return;
        for (Draw w : draws)
            if (w.tensor().data().length < w.tensor().offset() + w.tensor().numel())
                throw new IllegalStateException("cannot draw the deferred weights: the parameters are sharded (ZeRO-3) and"
                        + " no longer held whole; draw them before the strategy takes them apart");
        Rng rng = new Rng(seed);
        for (Draw w : draws) w.tensor().fillNormal(rng, w.std());
        discard();
    }

    /** Forgets the pending draws: the weights came from elsewhere (a checkpoint). */
    void discard() {
        pending = false;
        draws.clear();
    }

    boolean pending() { return pending; }
}
