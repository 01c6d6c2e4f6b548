package dev.jtrain.checkpoint;

import dev.jtrain.tensor.state.TensorShard;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decides what a rank reads on load: for each of its live shards, the saved pieces whose flat ranges overlap it
 * (a minimal cover, chosen greedily like interval covering), after checking the item exists with the same global
 * shape and dtype. That is all resharding needs: any world size, any ZeRO stage, because every layout is flat ranges
 * of the same named tensors.
 *
 * <p>With broadcast loading, replicated shards that every rank holds with the same range are read by one rank each
 * (largest first to the least-loaded rank, as in {@link SavePlanner}) and broadcast to the rest.
 */
final class LoadPlanner {
    /** Where a shard's elements come from: {@code count} elements of {@code piece} starting at element {@code pieceFirst}. */
    record Source(CheckpointMetadata.Piece piece, long pieceFirst, long shardFirst, long count) {}

    /** The plan of one live shard: its sources, and (broadcast) the rank that reads it for everyone, or -1. */
    record ShardPlan(TensorShard shard, String item, List<Source> sources, int broadcastRoot) {}

    private LoadPlanner() {}

    static List<ShardPlan> plan(CheckpointMetadata m, Path dir, List<TensorShard> live, List<PlannedShard> local) {
        List<ShardPlan> out = new ArrayList<>();
        for (int i = 0; i < live.size(); i++) {
            TensorShard t = live.get(i);
            PlannedShard p = local.get(i);
            CheckpointMetadata.Item item = m.items().get(p.item());
            if (item == null)
                throw new CheckpointException("checkpoint " + dir + " has no tensor " + p.item() + " (it holds " + m.items().size()
                        + " items, e.g. " + m.items().keySet().stream().limit(4).toList() + "); the model does not match the checkpoint");
            if (!Arrays.equals(item.shape(), p.shape()) || !item.dtype().equals(p.dtype()))
                throw new CheckpointException("checkpoint " + dir + ", tensor " + p.item() + ": saved as " + item.dtype()
                        + Arrays.toString(item.shape()) + " but the live tensor is " + p.dtype() + Arrays.toString(p.shape())
                        + "; the model does not match the checkpoint");
            out.add(new ShardPlan(t, p.item(), cover(dir, p, item), -1));
        }
        return out;
    }

    /** Greedy minimal cover of [offset, offset + length) by saved pieces; a gap is an error naming the elements. */
    private static List<Source> cover(Path dir, PlannedShard want, CheckpointMetadata.Item item) {
        List<CheckpointMetadata.Piece> ps = new ArrayList<>(item.pieces());
        ps.sort(Comparator.comparingLong(CheckpointMetadata.Piece::offset));
        long cursor = want.offset(), end = want.offset() + want.length();
        List<Source> out = new ArrayList<>();
        int i = 0;
        while (cursor < end) {
            CheckpointMetadata.Piece best = null;
            for (; i < ps.size() && ps.get(i).offset() <= cursor; i++)
                if (best == null || ps.get(i).offset() + ps.get(i).length() > best.offset() + best.length()) best = ps.get(i);
            if (best == null || best.offset() + best.length() <= cursor)
                throw new CheckpointException("checkpoint " + dir + ", tensor " + want.item() + ": no saved piece holds elements ["
                        + cursor + ", " + (best == null && i < ps.size() ? ps.get(i).offset() : end) + ") of the live shard ["
                        + want.offset() + ", " + end + ")");
            long stop = Math.min(end, best.offset() + best.length());
            out.add(new Source(best, cursor - best.offset(), cursor - want.offset(), stop - cursor));
            cursor = stop;
            // later pieces starting before the new cursor stay candidates: rewind to them
            i = 0;
            while (i < ps.size() && ps.get(i).offset() + ps.get(i).length() <= cursor) i++;
        }
        return out;
    }

    /**
     * Broadcast roots: shards whose replicated range every rank holds (keys from every rank, indexed by rank) are read
     * by one rank; returns range key → root. Deterministic, so every rank computes the same map.
     */
    static Map<String, Integer> broadcastRoots(List<List<String>> replicatedKeysByRank, Map<String, Long> bytesByKey) {
        int world = replicatedKeysByRank.size();
        Map<String, Integer> holders = new LinkedHashMap<>();
        for (List<String> keys : replicatedKeysByRank) for (String k : keys) holders.merge(k, 1, Integer::sum);
        List<String> shared = new ArrayList<>();
        holders.forEach((k, n) -> { if (n == world) shared.add(k); });
        shared.sort(Comparator.comparingLong((String k) -> -bytesByKey.getOrDefault(k, 0L)).thenComparing(Comparator.naturalOrder()));
        long[] load = new long[world];
        Map<String, Integer> roots = new LinkedHashMap<>();
        for (String k : shared) {
            int best = 0;
            for (int r = 1; r < world; r++) if (load[r] < load[best]) best = r;
            roots.put(k, best);
            load[best] += bytesByKey.getOrDefault(k, 0L);
        }
        return roots;
    }
}
