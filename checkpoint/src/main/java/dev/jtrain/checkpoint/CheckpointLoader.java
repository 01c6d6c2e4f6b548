package dev.jtrain.checkpoint;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.tensor.io.SafetensorsException;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.io.TensorInfo;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * One load, every rank in the same order:
 * <pre>
 *   resolve     root → step directory (explicit step, else 'latest'); read metadata.json
 *   plan        LoadPlanner: per live shard, the saved pieces covering it; shape/dtype checked
 *   (broadcast) allGather(my replicated range keys) → one reader per shared replicated shard
 *   read        the pieces I need, file by file, into one staging buffer; header validated, CRC32C verified
 *   agree       allGather(my error or "") → if any rank failed, every rank throws; live buffers untouched
 *   (broadcast) each shared shard: its reader assembles it in staging, broadcast to the others' staging
 *   apply       copy staging → live buffers; restore(metadata) of every part
 * </pre>
 * Nothing is written into a live buffer before every rank has read and verified everything, so a bad checkpoint
 * leaves the model exactly as it was.
 */
final class CheckpointLoader {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long CHUNK_BYTES = 64L << 20;

    private final ProcessGroup group;
    private final int rank, world;
    private final StagingPool staging;
    private final SpanSink spans;

    CheckpointLoader(ProcessGroup group, int rank, int world, StagingPool staging, SpanSink spans) {
        this.group = group;
        this.rank = rank;
        this.world = world;
        this.staging = staging;
        this.spans = spans;
    }

    LoadReport load(Path root, Map<String, Stateful> state, LoadOptions options) {
        long t0 = System.nanoTime();
        Path dir = CheckpointDirectory.resolve(root, options.step());
        CheckpointMetadata m = CheckpointMetadata.read(dir);
        for (String key : state.keySet())
            if (!m.state().containsKey(key))
                throw new CheckpointException("checkpoint " + dir + " has no state part '" + key + "' (it has " + m.state().keySet() + ")");
        List<TensorShard> live = LocalPlan.liveShards(state);
        LocalPlan local = LocalPlan.of(rank, world, state);
        List<LoadPlanner.ShardPlan> plans = LoadPlanner.plan(m, dir, live, local.shards());

        // Broadcast roots for replicated ranges every rank holds.
        Map<String, Integer> roots = Map.of();
        if (group != null && options.broadcast() && world > 1) {
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
            roots = LoadPlanner.broadcastRoots(all, bytes);
        }

        // Staging layout: pieces I read (each once), then one region per broadcast shard.
        Map<CheckpointMetadata.Piece, Long> pieceAt = new LinkedHashMap<>();
        long size = 0;
        int[] rootOf = new int[plans.size()];
        long[] regionAt = new long[plans.size()];
        for (int i = 0; i < plans.size(); i++) {
            Integer r = roots.get(local.shards().get(i).rangeKey());
            rootOf[i] = r == null ? -1 : r;
            if (rootOf[i] >= 0 && rootOf[i] != rank) continue; // someone else reads it
            for (LoadPlanner.Source s : plans.get(i).sources())
                if (!pieceAt.containsKey(s.piece())) {
                    pieceAt.put(s.piece(), size);
                    size += s.piece().byteLength();
                }
        }
        boolean[] inPlace = new boolean[plans.size()];
        for (int i = 0; i < plans.size(); i++) {
            if (rootOf[i] < 0) continue;
            List<LoadPlanner.Source> src = plans.get(i).sources();
            if (rootOf[i] == rank && src.size() == 1 && src.getFirst().pieceFirst() == 0 && src.getFirst().count() == src.getFirst().piece().length()) {
                regionAt[i] = pieceAt.get(src.getFirst().piece()); // the piece is the shard: broadcast straight from it
                inPlace[i] = true;
            } else {
                regionAt[i] = size;
                size += 4L * plans.get(i).shard().length();
            }
        }

        StagingPool.Buffer buf = staging.acquire(size);
        try {
            long r0 = System.nanoTime();
            long bytesRead = 0;
            String error = null;
            try {
                bytesRead = readAndVerify(dir, pieceAt, buf.segment(), plans);
            } catch (CheckpointException e) {
                error = "rank " + rank + ": " + e.getMessage();
            }
            long r1 = System.nanoTime();
            spans.span("ckpt load read+verify", r0, r1);
            if (group != null) {
                StringBuilder all = new StringBuilder();
                for (byte[] b : ByteExchange.allGather(group, (error == null ? "" : error).getBytes(StandardCharsets.UTF_8)))
                    if (b.length > 0) all.append(all.isEmpty() ? "" : "; ").append(new String(b, StandardCharsets.UTF_8));
                if (!all.isEmpty()) throw new CheckpointException("loading " + dir + " failed, live state untouched: " + all);
            } else if (error != null) {
                throw new CheckpointException("loading " + dir + " failed, live state untouched: " + error);
            }

            long broadcastBytes = 0;
            for (int i = 0; i < plans.size(); i++) {
                if (rootOf[i] < 0) continue;
                LoadPlanner.ShardPlan p = plans.get(i);
                MemorySegment region = buf.segment().asSlice(regionAt[i], 4L * p.shard().length());
                if (rootOf[i] == rank && !inPlace[i])
                    for (LoadPlanner.Source s : p.sources())
                        MemorySegment.copy(buf.segment(), pieceAt.get(s.piece()) + 4 * s.pieceFirst(), region, 4 * s.shardFirst(), 4 * s.count());
                if (p.shard().length() > 0) group.broadcast(region, p.shard().length(), DType.FLOAT32, rootOf[i]);
                if (rootOf[i] != rank) broadcastBytes += region.byteSize();
            }
            long b1 = System.nanoTime();
            if (!roots.isEmpty()) spans.span("ckpt load broadcast", r1, b1);

            for (int i = 0; i < plans.size(); i++) {
                LoadPlanner.ShardPlan p = plans.get(i);
                TensorShard t = p.shard();
                if (rootOf[i] >= 0) {
                    MemorySegment.copy(buf.segment(), F32_LE, regionAt[i], t.data(), t.dataOffset(), t.length());
                } else {
                    for (LoadPlanner.Source s : p.sources())
                        MemorySegment.copy(buf.segment(), F32_LE, pieceAt.get(s.piece()) + 4 * s.pieceFirst(), t.data(),
                                Math.toIntExact(t.dataOffset() + s.shardFirst()), Math.toIntExact(s.count()));
                }
            }
            int restoreFrom = m.worldSize() == world ? rank : 0; // same layout: this rank's own metadata (its RNG...)
            for (var e : state.entrySet()) {
                List<Map<String, String>> perRank = m.state().get(e.getKey());
                e.getValue().restore(perRank.isEmpty() ? Map.of() : perRank.get(Math.min(restoreFrom, perRank.size() - 1)));
            }
            long t1 = System.nanoTime();
            spans.span("ckpt load apply", b1, t1);
            return new LoadReport(m.step(), dir, m.worldSize(), bytesRead, broadcastBytes, r1 - r0, t1 - t0);
        } finally {
            staging.release(buf);
        }
    }

    /** Reads every needed piece into staging, file by file, verifying header, placement and CRC32C. */
    private long readAndVerify(Path dir, Map<CheckpointMetadata.Piece, Long> pieceAt, MemorySegment stage,
                               List<LoadPlanner.ShardPlan> plans) {
        Map<String, List<CheckpointMetadata.Piece>> byFile = new LinkedHashMap<>();
        for (CheckpointMetadata.Piece p : pieceAt.keySet()) byFile.computeIfAbsent(p.file(), f -> new ArrayList<>()).add(p);
        long total = 0;
        for (var e : byFile.entrySet()) {
            Path file = dir.resolve(e.getKey());
            try (SafetensorsReader header = SafetensorsReader.open(file); // validates the header and that the file is whole
                 FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                for (CheckpointMetadata.Piece p : e.getValue()) {
                    String item = itemOf(plans, p);
                    if (!header.contains(p.tensor()))
                        throw new CheckpointException("file " + file + " has no tensor " + p.tensor() + " (item " + item + ")");
                    TensorInfo info = header.info(p.tensor());
                    if (!"F32".equals(info.dtype().name()) || info.byteLength() != p.byteLength())
                        throw new CheckpointException("file " + file + ", tensor " + p.tensor() + " (item " + item + "): stored as "
                                + info.dtype() + " with " + info.byteLength() + " bytes, metadata says F32 with " + p.byteLength());
                    MemorySegment dst = stage.asSlice(pieceAt.get(p), p.byteLength());
                    readFully(ch, dst, p.fileOffset(), file, p.tensor());
                    CRC32C crc = new CRC32C();
                    for (long done = 0; done < dst.byteSize(); done += CHUNK_BYTES)
                        crc.update(dst.asSlice(done, Math.min(CHUNK_BYTES, dst.byteSize() - done)).asByteBuffer());
                    String got = String.format("%08x", crc.getValue());
                    if (!got.equals(p.crc32c()))
                        throw new CheckpointException("file " + file + ", tensor " + p.tensor() + " (item " + item + "): CRC32C "
                                + got + " does not match the saved " + p.crc32c() + "; the file is corrupt");
                    total += p.byteLength();
                }
            } catch (SafetensorsException ex) {
                throw new CheckpointException("file " + file + " (items " + itemsIn(plans, e.getValue()) + "): " + ex.getMessage(), ex);
            } catch (IOException ex) {
                throw new CheckpointException("file " + file + " (items " + itemsIn(plans, e.getValue()) + "): cannot read: " + ex, ex);
            }
        }
        return total;
    }

    private static void readFully(FileChannel ch, MemorySegment dst, long position, Path file, String tensor) throws IOException {
        for (long done = 0; done < dst.byteSize(); ) {
            ByteBuffer bb = dst.asSlice(done, Math.min(CHUNK_BYTES, dst.byteSize() - done)).asByteBuffer();
            while (bb.hasRemaining()) {
                int n = ch.read(bb, position + done + bb.position());
                if (n < 0) throw new CheckpointException("file " + file + ", tensor " + tensor + ": ends early (truncated)");
            }
            done += bb.capacity();
        }
    }

    private static String itemOf(List<LoadPlanner.ShardPlan> plans, CheckpointMetadata.Piece p) {
        for (LoadPlanner.ShardPlan s : plans) for (LoadPlanner.Source src : s.sources()) if (src.piece().equals(p)) return s.item();
        return p.tensor();
    }

    private static List<String> itemsIn(List<LoadPlanner.ShardPlan> plans, List<CheckpointMetadata.Piece> ps) {
        List<String> out = new ArrayList<>();
        for (CheckpointMetadata.Piece p : ps) {
            String i = itemOf(plans, p);
            if (!out.contains(i)) out.add(i);
        }
        return out.size() > 5 ? List.copyOf(out.subList(0, 5)) : out;
    }
}
