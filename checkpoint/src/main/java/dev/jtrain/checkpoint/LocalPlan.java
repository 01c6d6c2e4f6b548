package dev.jtrain.checkpoint;

import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What one rank holds: every shard of every state part, in a deterministic order (state keys in map order, then
 * each part's {@link Stateful#shards()} order). Equal local plans mean an identical layout, so this record, compared
 * whole (names, shapes, dtypes, offsets, lengths, replication, rank and world size), is the plan cache's key.
 */
public record LocalPlan(int rank, int worldSize, List<PlannedShard> shards) {
    public LocalPlan {
        shards = List.copyOf(shards);
    }

    /** The shards of {@code state} with their live buffers, in the same order as {@link #shards()}. */
    static List<TensorShard> liveShards(Map<String, Stateful> state) {
        List<TensorShard> out = new ArrayList<>();
        for (Stateful s : state.values()) out.addAll(s.shards());
        return out;
    }

    static LocalPlan of(int rank, int worldSize, Map<String, Stateful> state) {
        List<PlannedShard> out = new ArrayList<>();
        for (var e : state.entrySet()) {
            if (e.getKey().contains("/"))
                throw new IllegalArgumentException("state key must not contain '/': key=" + e.getKey());
            for (TensorShard t : e.getValue().shards())
                out.add(new PlannedShard(e.getKey() + "/" + t.name(), t.globalShape(), "F32", t.globalOffset(), t.length(),
                        t.replicated()));
        }
        return new LocalPlan(rank, worldSize, out);
    }

    public long bytes() {
        long b = 0;
        for (PlannedShard s : shards) b += s.bytes();
        return b;
    }
}
