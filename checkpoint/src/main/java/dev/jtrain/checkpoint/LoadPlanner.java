package dev.jtrain.checkpoint;

import dev.jtrain.tensor.state.TensorShard;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

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

    /** The plan of one live shard: the saved pieces it is assembled from. */
    record ShardPlan(TensorShard shard, String item, List<Source> sources) {}

    /**
     * What one rank reads, in which order, and where it lands (all decided before the first byte is read).
     *
     * @param rootOf       per shard plan: the rank that reads it for everyone (broadcast), or -1 if every rank reads it
     * @param own          the pieces of shards this rank loads on its own, in read order
     * @param layout       staging for every piece this rank reads (own first, then those it broadcasts), each once,
     *                     mirroring its file (see {@link ReadLayout})
     * @param stagingBytes the layout plus one region per broadcast shard that is not sent straight from its piece (a
     *                     batched shard, or one assembled from parts of pieces)
     * @param regionAt     per shard plan with a root: where its elements are assembled in staging
     * @param inPlace      per shard plan: the root broadcasts straight from the piece (the piece is the shard)
     * @param swappable    own pieces that feed exactly one live range and no broadcast: swapped into the live buffer as
     *                     they land (the rest are copied after the ranks agree)
     * @param issueAt      per shard plan: the broadcast to issue once this shard is in place (the shard alone, or the
     *                     batch it completes in plan order), or null
     */
    record ReadPlan(int[] rootOf, List<CheckpointMetadata.Piece> own, ReadLayout layout, long stagingBytes, long[] regionAt,
                    boolean[] inPlace, Map<CheckpointMetadata.Piece, SwapTarget> swappable, Broadcast[] issueAt) {}

    /** One broadcast: {@code floats} contiguous elements at staging offset {@code stageAt}, sent by {@code root}. */
    record Broadcast(int root, long stageAt, long floats) {}

    /** The live range an own piece is swapped into. */
    record SwapTarget(Source source, TensorShard shard) {}

    /**
     * Read order and staging for {@code plans}: own pieces file by file in file order (sequential reads), rank r
     * starting at the r-th file; then the pieces of the shards this rank broadcasts, in plan order.
     *
     * <p>Broadcast shards smaller than {@code batchBytes} travel in batches: each root's small shards, in plan order,
     * fill contiguous staging regions of up to {@code batchBytes} (laid out alike on every rank), and each region goes
     * in one broadcast once its last shard is read. A model's state is mostly small tensors (norms, biases, each
     * parameter's optimizer moments), and n broadcasts of S bytes in all cost n·α + S/β (Hockney): one per tensor
     * puts hundreds of latencies, each paid on every hop of the broadcast, in front of a transfer that batching leaves
     * as it is (bench/MEASUREMENTS.md, "Where a restarted rank's time goes"). Larger shards are still broadcast
     * alone, straight from the piece the root read when the piece is the shard, and keep overlapping the reads.
     *
     * @param rangeKeys  per plan, the key of its range (to look up {@code roots})
     * @param roots      broadcast root per replicated range key ({@link #broadcastRoots}); empty without broadcast
     * @param batchBytes largest broadcast batch of small shards; 0 = one broadcast per shard
     */
    static ReadPlan readPlan(List<ShardPlan> plans, List<String> rangeKeys, Map<String, Integer> roots, int rank, long batchBytes) {
        int[] rootOf = new int[plans.size()];
        for (int i = 0; i < plans.size(); i++) {
            Integer r = roots.get(rangeKeys.get(i));
            rootOf[i] = r == null ? -1 : r;
        }
        List<CheckpointMetadata.Piece> own = new ArrayList<>();
        for (int i = 0; i < plans.size(); i++)
            if (rootOf[i] < 0)
                for (Source s : plans.get(i).sources()) own.add(s.piece());
        // Ranks that read the same files (replicated state, no broadcast) start at different ones: the disk serves one
        // stream per file instead of every rank racing through the same blocks (and where reads go through the page
        // cache, each file a rank reaches later is there, read by the rank that started on it).
        List<String> fileNames = own.stream().map(CheckpointMetadata.Piece::file).distinct().sorted().toList();
        Map<String, Integer> turn = new HashMap<>();
        for (int f = 0; f < fileNames.size(); f++) turn.put(fileNames.get(f), Math.floorMod(f - rank, fileNames.size()));
        own.sort(Comparator.comparing((CheckpointMetadata.Piece p) -> turn.get(p.file())).thenComparingLong(CheckpointMetadata.Piece::fileOffset));
        Set<CheckpointMetadata.Piece> order = new LinkedHashSet<>(own);
        for (int i = 0; i < plans.size(); i++)
            if (rootOf[i] == rank)
                for (Source s : plans.get(i).sources()) order.add(s.piece());

        ReadLayout layout = ReadLayout.of(List.copyOf(order));
        Map<CheckpointMetadata.Piece, Long> pieceAt = layout.pieceAt();
        long size = layout.size();
        long[] regionAt = new long[plans.size()];
        boolean[] inPlace = new boolean[plans.size()];
        Broadcast[] issueAt = new Broadcast[plans.size()];
        // Small shards into batches per root (plan order); a batch's members are laid out back to back, batch by batch.
        Map<Integer, Batch> open = new HashMap<>(); // root -> its batch being filled
        List<Batch> batched = new ArrayList<>();
        for (int i = 0; i < plans.size(); i++) {
            long bytes = 4L * plans.get(i).shard().length();
            if (rootOf[i] < 0 || bytes == 0 || bytes >= batchBytes) continue;
            Batch b = open.get(rootOf[i]);
            if (b == null || b.bytes + bytes > batchBytes) {
                b = new Batch();
                batched.add(b);
                open.put(rootOf[i], b);
            }
            b.members.add(i);
            b.bytes += bytes;
        }
        boolean[] inBatch = new boolean[plans.size()];
        for (Batch batch : batched) {
            List<Integer> b = batch.members;
            long base = size;
            for (int i : b) {
                inBatch[i] = true;
                regionAt[i] = size;
                size += 4L * plans.get(i).shard().length();
            }
            issueAt[b.getLast()] = new Broadcast(rootOf[b.getFirst()], base, (size - base) / 4);
        }
        for (int i = 0; i < plans.size(); i++) {
            if (rootOf[i] < 0 || inBatch[i] || plans.get(i).shard().length() == 0) continue;
            List<Source> src = plans.get(i).sources();
            if (rootOf[i] == rank && src.size() == 1 && src.getFirst().pieceFirst() == 0 && src.getFirst().count() == src.getFirst().piece().length()) {
                regionAt[i] = pieceAt.get(src.getFirst().piece()); // the piece is the shard: broadcast straight from it
                inPlace[i] = true;
            } else {
                regionAt[i] = size;
                size += 4L * plans.get(i).shard().length();
            }
            issueAt[i] = new Broadcast(rootOf[i], regionAt[i], plans.get(i).shard().length());
        }
        // After a swap, a piece's staging holds the old live values: only a piece used exactly once may be swapped.
        Map<CheckpointMetadata.Piece, Integer> uses = new HashMap<>();
        for (int i = 0; i < plans.size(); i++)
            for (Source s : plans.get(i).sources())
                uses.merge(s.piece(), rootOf[i] < 0 ? 1 : 2, Integer::sum);
        Map<CheckpointMetadata.Piece, SwapTarget> swappable = new HashMap<>();
        for (int i = 0; i < plans.size(); i++) {
            if (rootOf[i] >= 0) continue;
            for (Source s : plans.get(i).sources())
                if (uses.get(s.piece()) == 1) swappable.put(s.piece(), new SwapTarget(s, plans.get(i).shard()));
        }
        return new ReadPlan(rootOf, own, layout, size, regionAt, inPlace, swappable, issueAt);
    }

    /** Small shards of one root sent in one broadcast: their plan indices, in plan order, and their bytes. */
    private static final class Batch {
        final List<Integer> members = new ArrayList<>();
        long bytes;
    }

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
            out.add(new ShardPlan(t, p.item(), cover(dir, p, item)));
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
