package dev.jtrain.tensor.state;

import java.util.List;
import java.util.Map;

/**
 * A part of training state that can be checkpointed (model, optimizer, trainer position): its tensors as
 * {@link TensorShard}s over live buffers plus small string metadata. Load writes the saved values into the shards'
 * buffers, then calls {@link #restore} with the saved metadata so the part can re-derive anything else
 * (a step counter, an RNG state) and re-synchronise.
 */
public interface Stateful {
    /** This rank's pieces, in a deterministic order; the same set on every call while the layout is unchanged. */
    List<TensorShard> shards();

    /** Small non-tensor state (JSON-safe strings). */
    Map<String, String> metadata();

    /** Called after the shards' buffers hold the loaded values, with the saved metadata. */
    void restore(Map<String, String> metadata);
}
