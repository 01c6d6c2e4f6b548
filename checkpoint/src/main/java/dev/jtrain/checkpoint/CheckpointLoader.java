package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.comm.DType;
import dev.jtrain.comm.JTrainCommException;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.Work;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One load, every rank in the same order:
 * <pre>
 *   resolve     root → step directory (explicit step, else 'latest'); read metadata, agreed (any rank's failure fails all)
 *   plan        LoadPlanner: per live shard, the saved pieces covering it; shape/dtype checked
 *   (broadcast) allGather(my replicated range keys) → one reader per shared replicated shard
 *   read        the pieces only I need, file by file, into one staging buffer on a reader thread; as they land: header
 *               validated, CRC32C verified, and swapped into the live buffers (undoably, see LiveSwaps) while the
 *               load waits for the disk, else left for apply
 *   (broadcast) each shared shard in plan order: its reader reads and verifies it, then broadcasts it (async) to the
 *               others' staging while reading the next — reads and broadcasts overlap
 *   agree       allGather(my error or "") → if any rank failed, every rank undoes its swaps and throws
 *   apply       copy staging → live buffers for what was not swapped in: ranges deferred while the reader was
 *               ahead, broadcast shards, pieces that feed several ranges;
 *               restore(metadata) of every part
 * </pre>
 * A load that fails on any rank before the agreement (a bad, truncated or missing file, a shape mismatch, a lost
 * peer) leaves every rank's live buffers exactly as they were: the swaps are undone, and nothing else is written into
 * a live buffer before the agreement. What comes after it (copies, {@code restore}) touches only verified data.
 */
final class CheckpointLoader {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ProcessGroup group;
    private final int rank, world;
    private final StagingPool staging;
    private final SpanSink spans;

    private final CheckpointStorage storage;
    private final CheckpointerOptions settings;

    CheckpointLoader(ProcessGroup group, int rank, int world, StagingPool staging, SpanSink spans, CheckpointStorage storage,
                     CheckpointerOptions settings) {
        this.storage = storage;
        this.settings = settings;
        this.group = group;
        this.rank = rank;
        this.world = world;
        this.staging = staging;
        this.spans = spans;
    }

    /**
     * The metadata of {@code dir}, read by every rank; a rank that cannot read or parse it fails every rank's load (on
     * per-host disks one host may miss what the others see), before any collective of the load could wait for it.
     */
    private CheckpointMetadata agreedMetadata(Path dir) {
        CheckpointMetadata m = null;
        String error = null;
        try {
            m = CheckpointMetadata.read(storage, dir);
        } catch (CheckpointException e) {
            error = failure(e);
        }
        agree(dir, error);
        return m;
    }

    /** Marks the errors {@link #agree} gathers: the checkpoint's own fault, or anything else. */
    private static final char CORRUPT = 'C', FAILED = 'F';

    /**
     * Every rank's {@code error} (null = none; from {@link #failure}) is gathered; if any rank has one, every rank
     * throws all of them: {@link CheckpointCorruptException} when each is the checkpoint's own fault (a missing,
     * truncated or malformed file, a CRC32C mismatch), so that a caller may fall back to an older one; otherwise (the
     * storage failed to read, the checkpoint does not fit the model, the rank ran out of memory) a plain
     * {@link CheckpointException}, since an older checkpoint would not be any better and this one must not be set aside.
     */
    private void agree(Path dir, String error) {
        List<String> errors = new ArrayList<>();
        if (group != null) {
            for (byte[] b : ByteExchange.allGather(group, (error == null ? "" : error).getBytes(StandardCharsets.UTF_8)))
                if (b.length > 0) errors.add(new String(b, StandardCharsets.UTF_8));
        } else if (error != null) {
            errors.add(error);
        }
        if (errors.isEmpty()) return;
        boolean corrupt = errors.stream().allMatch(e -> e.charAt(0) == CORRUPT);
        String all = String.join("; ", errors.stream().map(e -> e.substring(1)).toList());
        if (corrupt) throw new CheckpointCorruptException(dir, "loading " + dir + " failed, live state untouched: " + all, null);
        throw new CheckpointException("loading " + dir + " failed, live state untouched (the checkpoint was not found corrupt, so it"
                + " is neither skipped nor set aside): " + all);
    }

    /** The step directory to load, from the storage; names the root when there is none. */
    private Path resolve(Path root, long step) {
        try {
            return storage.resolve(root, step);
        } catch (NoSuchFileException e) {
            throw new CheckpointException("rank " + rank + ": no committed checkpoint under " + root
                    + (step >= 0 ? " at step " + step : "") + " (" + e.getReason() + ")", e);
        } catch (IOException e) {
            throw new CheckpointException("rank " + rank + ": cannot find the checkpoint to load under " + root + ": " + e, e);
        }
    }

    LoadReport load(Path root, Map<String, Stateful> state, LoadOptions options) {
        return loadStep(resolve(root, options.step()), state, options);
    }

    /**
     * Loads committed step {@code dir}.
     *
     * @throws CheckpointCorruptException on every rank alike, live state untouched, if any rank finds its metadata or a
     *                                    piece it reads missing, malformed or failing verification (and none fails
     *                                    otherwise: then a {@link CheckpointException}, on every rank alike too)
     */
    LoadReport loadStep(Path dir, Map<String, Stateful> state, LoadOptions options) {
        long t0 = System.nanoTime();
        CheckpointMetadata m = agreedMetadata(dir);
        // Planning can fail on some ranks only (under ZeRO a rank plans only the ranges it owns, so only the owner of a
        // tensor whose shape does not match finds out): the ranks agree before any collective could wait for one.
        List<TensorShard> live = null;
        LocalPlan local = null;
        List<LoadPlanner.ShardPlan> plans = null;
        String planError = null;
        try {
            for (String key : state.keySet())
                if (!m.state().containsKey(key))
                    throw new CheckpointException("checkpoint " + dir + " has no state part '" + key + "' (it has " + m.state().keySet() + ")");
            live = LocalPlan.liveShards(state);
            local = LocalPlan.of(rank, world, state);
            plans = LoadPlanner.plan(m, dir, live, local.shards());
        } catch (RuntimeException e) {
            planError = failure(e);
        }
        agree(dir, planError);

        Map<String, Integer> roots = group != null && options.broadcast() && world > 1 ? broadcastRoots(local) : Map.of();
        List<String> rangeKeys = local.shards().stream().map(PlannedShard::rangeKey).toList();
        LoadPlanner.ReadPlan rp = LoadPlanner.readPlan(plans, rangeKeys, roots, rank, settings.broadcastBatchBytes());
        int[] rootOf = rp.rootOf();
        List<CheckpointMetadata.Piece> own = rp.own();
        ReadLayout layout = rp.layout();
        Map<CheckpointMetadata.Piece, Long> pieceAt = layout.pieceAt();
        long size = rp.stagingBytes();
        long[] regionAt = rp.regionAt();
        boolean[] inPlace = rp.inPlace();
        Map<CheckpointMetadata.Piece, Swappable> swappable = new HashMap<>();
        rp.swappable().forEach((piece, target) -> swappable.put(piece, new Swappable(target.source(), target.shard())));

        StagingPool.Buffer buf = null;
        String stagingError = null;
        try {
            buf = staging.acquire(size);
        } catch (RuntimeException | OutOfMemoryError e) {
            stagingError = failure(new CheckpointException("staging " + size + " bytes to load " + dir + ": " + e, e));
        }
        try {
            agree(dir, stagingError); // before the broadcasts, which every rank's staging takes part in
        } catch (RuntimeException e) {
            if (buf != null) staging.release(buf); // another rank's staging failed: this one's goes back unused
            throw e;
        }
        MemorySegment stage = buf.segment();
        List<Work> inFlight = new ArrayList<>();
        LiveSwaps swaps = new LiveSwaps();
        List<Deferred> deferred = new ArrayList<>();
        boolean applied = false;
        try (PieceReader reader = new PieceReader(storage, dir, plans, rank, settings.directIo(), settings.loadLeadBytes())) {
            long r0 = System.nanoTime();
            reader.start(layout, stage);
            String error = null;
            // 1. The pieces of shards this rank loads on its own: checksummed and swapped into the live buffers as they
            //    land, while the reader thread reads the next ones.
            try {
                for (CheckpointMetadata.Piece p : own) {
                    Swappable sw = swappable.get(p);
                    reader.consume(p, sw == null ? null : (from, to, behind) -> sw.landed(swaps, deferred, stage, pieceAt.get(p), from, to, behind));
                }
            } catch (RuntimeException | Error e) { // still take part in the broadcasts and the agreement below
                error = failure(e);
                reader.cancel();
            }
            // 2. Shared shards, in plan order on every rank: the reader of shard i issues its broadcast (or its batch's,
            //    when i completes one) as soon as i is read and verified, then reads i+1 while i travels (and the other
            //    ranks issue their receives up front), so disk reads and broadcasts overlap instead of running one after
            //    the other. A reader that failed still broadcasts (garbage) to keep every rank's collectives in step; the
            //    agreement below then rejects the load.
            long broadcastBytes = 0;
            for (int i = 0; i < plans.size(); i++) {
                if (rootOf[i] < 0) continue;
                LoadPlanner.ShardPlan p = plans.get(i);
                MemorySegment region = stage.asSlice(regionAt[i], 4L * p.shard().length());
                if (rootOf[i] == rank) {
                    if (error == null) {
                        try {
                            for (LoadPlanner.Source s : p.sources()) reader.consume(s.piece(), null);
                            if (!inPlace[i])
                                for (LoadPlanner.Source s : p.sources())
                                    MemorySegment.copy(stage, pieceAt.get(s.piece()) + 4 * s.pieceFirst(), region, 4 * s.shardFirst(), 4 * s.count());
                        } catch (RuntimeException | Error e) {
                            error = failure(e);
                            reader.cancel();
                        }
                    }
                } else {
                    broadcastBytes += region.byteSize();
                }
                LoadPlanner.Broadcast b = rp.issueAt()[i];
                if (b != null) inFlight.add(group.broadcastAsync(stage.asSlice(b.stageAt(), 4 * b.floats()), b.floats(), DType.FLOAT32, b.root()));
            }
            long r1 = System.nanoTime();
            spans.span("ckpt load read+verify", r0, r1);
            try {
                for (Work w : inFlight) w.waitFor();
            } catch (JTrainCommException e) {
                throw new CheckpointException("rank " + rank + ": loading " + dir + " failed while broadcasting shared shards, live"
                        + " state untouched: " + e.getMessage(), e);
            }
            long b1 = System.nanoTime();
            if (!roots.isEmpty()) spans.span("ckpt load broadcast", r0, b1);

            // 3. Agree: if any rank failed to read or verify, every rank throws and its swaps are undone (finally).
            agree(dir, error);
            long bytesRead = reader.bytesRead();
            if (reader.interrupted()) Thread.currentThread().interrupt(); // kept through the collectives above

            // 4. Apply what was not swapped in: ranges deferred while the reader was ahead, broadcast shards, and pieces
            //    that feed more than one range.
            for (Deferred d : deferred) MemorySegment.copy(stage, F32_LE, d.stageOffset(), d.live(), d.liveOffset(), d.count());
            for (int i = 0; i < plans.size(); i++) {
                LoadPlanner.ShardPlan p = plans.get(i);
                TensorShard t = p.shard();
                if (rootOf[i] >= 0) {
                    MemorySegment.copy(stage, F32_LE, regionAt[i], t.data(), t.dataOffset(), t.length());
                } else {
                    for (LoadPlanner.Source s : p.sources())
                        if (!swappable.containsKey(s.piece()))
                            MemorySegment.copy(stage, F32_LE, pieceAt.get(s.piece()) + 4 * s.pieceFirst(), t.data(),
                                    Math.toIntExact(t.dataOffset() + s.shardFirst()), Math.toIntExact(s.count()));
                }
            }
            applied = true;
            int restoreFrom = m.worldSize() == world ? rank : 0; // same layout: this rank's own metadata (its RNG...)
            for (var e : state.entrySet()) {
                List<Map<String, String>> perRank = m.state().get(e.getKey());
                e.getValue().restore(perRank.isEmpty() ? Map.of() : perRank.get(Math.min(restoreFrom, perRank.size() - 1)));
            }
            long t1 = System.nanoTime();
            spans.span("ckpt load apply", b1, t1);
            return new LoadReport(m.step(), dir, m.worldSize(), bytesRead, broadcastBytes, inFlight.size(), r1 - r0, t1 - t0, reader.directBytes(),
                    List.of());
        } finally {
            if (!applied) swaps.undo(); // the reader is closed (joined) by now; staging still holds the old values
            // Only a broadcast that succeeded is known to be done with the buffer: one failed by the watchdog may still
            // be receiving into it on the communication thread, so such a buffer is freed, never handed out again.
            boolean settled = true;
            for (Work w : inFlight) settled &= w.isSuccess();
            if (settled) staging.release(buf);
            else staging.discard(buf);
        }
    }

    /** Agrees, with every rank, which rank reads each replicated range that all of them hold (broadcast load). */
    private Map<String, Integer> broadcastRoots(LocalPlan local) {
        List<String> keys = new ArrayList<>();
        Map<String, Long> bytes = new LinkedHashMap<>();
        for (PlannedShard s : local.shards())
            if (s.replicated()) {
                keys.add(s.rangeKey());
                bytes.put(s.rangeKey(), s.bytes());
            }
        List<List<String>> all = new ArrayList<>();
        for (byte[] b : ByteExchange.allGather(group, String.join("\n", keys).getBytes(StandardCharsets.UTF_8))) {
            String s = new String(b, StandardCharsets.UTF_8);
            all.add(s.isEmpty() ? List.of() : List.of(s.split("\n")));
        }
        return LoadPlanner.broadcastRoots(all, bytes);
    }

    /** What this rank tells the others about a failed read: a checkpoint problem as it is, anything else as unexpected. */
    private String failure(Throwable e) {
        return (e instanceof CheckpointCorruptException ? CORRUPT : FAILED) + "rank " + rank + ": "
                + (e instanceof CheckpointException ? e.getMessage() : "loading failed unexpectedly: " + e);
    }

    /** A range of staging left to copy into a live buffer after the agreement. */
    private record Deferred(long stageOffset, float[] live, int liveOffset, int count) { }

    /** An own piece that feeds exactly one live range: landed bytes of it go into {@code shard}'s buffer. */
    private record Swappable(LoadPlanner.Source source, TensorShard shard) {
        /**
         * Places the part of landed piece bytes [from, to) that the source uses ({@code at}: the piece in staging).
         * While the load waits for the disk, the bytes are swapped in now, in time the loading thread would spend
         * waiting, so little is left to do after the agreement. When the reader is ahead ({@code behind}: the bytes
         * came from the page cache, and the loading thread is the bottleneck) a swap, which moves twice the bytes of
         * a copy, would lengthen the load: the range is copied after the agreement instead.
         */
        void landed(LiveSwaps swaps, List<Deferred> deferred, MemorySegment stage, long at, long from, long to, boolean behind) {
            long lo = Math.max(from, 4 * source.pieceFirst()), hi = Math.min(to, 4 * (source.pieceFirst() + source.count()));
            if (lo >= hi) return;
            // Pieces hold whole floats and chunks are multiples of 4 bytes, so lo and hi are float boundaries.
            int liveFirst = Math.toIntExact(shard.dataOffset() + source.shardFirst() + (lo / 4 - source.pieceFirst()));
            int count = Math.toIntExact((hi - lo) / 4);
            if (behind) deferred.add(new Deferred(at + lo, shard.data(), liveFirst, count));
            else swaps.swap(stage, at + lo, shard.data(), liveFirst, count);
        }
    }
}
