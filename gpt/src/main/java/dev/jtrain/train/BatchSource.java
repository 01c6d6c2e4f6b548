package dev.jtrain.train;

import dev.jtrain.gpt.data.Batch;

/** Deterministic batches: the same step always gives the same batch (what makes resume and N-rank equivalence exact). */
@FunctionalInterface
public interface BatchSource {
    Batch next(long step);
}
