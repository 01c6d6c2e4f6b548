package dev.jtrain.nn;

import dev.jtrain.tensor.Tensor;

import java.util.List;

/**
 * A model cut into units for fully sharded training (ZeRO-3): each unit's parameters are gathered just before it
 * runs and freed after, so a rank holds its shard of everything and the full parameters of about two units at a
 * time. A unit is typically one transformer block; parameters in no unit (embeddings, a tied head, the final norm)
 * form the root, which stays gathered for the whole step.
 *
 * <p>Contract for the model: it calls {@link UnitHooks} around every unit in every forward (see
 * {@link UnitHooks#around}) and {@code beforeForward(ROOT)} at the start, uses a unit's parameters only inside it, and
 * reads parameters in backward from the parameter tensors (whose storage moves between gathers), not from arrays
 * captured at forward time.
 */
public interface ShardedModel {
    /** The parameters of each unit, in forward order. */
    List<List<Tensor>> units();

    /** Installs the hooks (null: none) called around each unit. */
    void setUnitHooks(UnitHooks hooks);
}
