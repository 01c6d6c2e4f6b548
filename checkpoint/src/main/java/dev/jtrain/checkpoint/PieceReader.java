package dev.jtrain.checkpoint;

import dev.jtrain.tensor.io.SafetensorsException;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.io.TensorInfo;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads saved pieces of one checkpoint into staging and verifies each: the shard file's safetensors header (parsed
 * once per file, which also checks the file is whole), the piece's dtype and length against the metadata, and its
 * CRC32C. Files stay open for the whole load, so a load may read in any order — shard by shard, as a pipelined
 * broadcast load does — without reopening or re-parsing. A piece already read is not read again.
 *
 * <p>Errors are {@link CheckpointException}s naming the file, the tensor and the item.
 *
 * <p>Threading: one load, one thread.
 */
final class PieceReader implements AutoCloseable {
    private static final long CHUNK_BYTES = 64L << 20;

    private record OpenFile(Path path, SafetensorsReader header, FileChannel channel) { }

    private final Path dir;
    private final List<LoadPlanner.ShardPlan> plans;
    private final Map<String, OpenFile> files = new HashMap<>();
    private final Set<CheckpointMetadata.Piece> done = new HashSet<>();
    private long bytesRead;

    /** @param plans the load's plan, to name items in errors */
    PieceReader(Path dir, List<LoadPlanner.ShardPlan> plans) {
        this.dir = dir;
        this.plans = plans;
    }

    /** Bytes read and verified so far. */
    long bytesRead() { return bytesRead; }

    /** Reads {@code pieces} not read yet into {@code stage} at their {@code pieceAt} offsets, in the given order. */
    void read(Collection<CheckpointMetadata.Piece> pieces, Map<CheckpointMetadata.Piece, Long> pieceAt, MemorySegment stage) {
        for (CheckpointMetadata.Piece p : pieces) {
            if (done.contains(p)) continue;
            read(p, stage.asSlice(pieceAt.get(p), p.byteLength()));
            done.add(p);
        }
    }

    private void read(CheckpointMetadata.Piece p, MemorySegment dst) {
        OpenFile f = open(p);
        String item = itemOf(p);
        if (!f.header().contains(p.tensor()))
            throw new CheckpointException("file " + f.path() + " has no tensor " + p.tensor() + " (item " + item + ")");
        TensorInfo info = f.header().info(p.tensor());
        if (!"F32".equals(info.dtype().name()) || info.byteLength() != p.byteLength())
            throw new CheckpointException("file " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): stored as "
                    + info.dtype() + " with " + info.byteLength() + " bytes, metadata says F32 with " + p.byteLength());
        try {
            readFully(f.channel(), dst, p.fileOffset(), f.path(), p.tensor());
        } catch (IOException e) {
            throw new CheckpointException("file " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): cannot read: " + e, e);
        }
        String got = Crc32c.hex(dst);
        if (!got.equals(p.crc32c()))
            throw new CheckpointException("file " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): CRC32C "
                    + got + " does not match the saved " + p.crc32c() + "; the file is corrupt");
        bytesRead += p.byteLength();
    }

    private OpenFile open(CheckpointMetadata.Piece p) {
        OpenFile f = files.get(p.file());
        if (f != null) return f;
        Path path = dir.resolve(p.file());
        SafetensorsReader header = null;
        try {
            header = SafetensorsReader.open(path); // validates the header and that the file is whole
            f = new OpenFile(path, header, FileChannel.open(path, StandardOpenOption.READ));
        } catch (SafetensorsException e) {
            throw new CheckpointException("file " + path + " (items " + itemsIn(p.file()) + "): " + e.getMessage(), e);
        } catch (IOException e) {
            closeQuietly(header);
            throw new CheckpointException("file " + path + " (items " + itemsIn(p.file()) + "): cannot read: " + e, e);
        }
        files.put(p.file(), f);
        return f;
    }

    private static void readFully(FileChannel ch, MemorySegment dst, long position, Path file, String tensor) throws IOException {
        for (long off = 0; off < dst.byteSize(); ) {
            ByteBuffer bb = dst.asSlice(off, Math.min(CHUNK_BYTES, dst.byteSize() - off)).asByteBuffer();
            while (bb.hasRemaining()) {
                int n = ch.read(bb, position + off + bb.position());
                if (n < 0) throw new CheckpointException("file " + file + ", tensor " + tensor + ": ends early (truncated)");
            }
            off += bb.capacity();
        }
    }

    private String itemOf(CheckpointMetadata.Piece p) {
        for (LoadPlanner.ShardPlan s : plans) for (LoadPlanner.Source src : s.sources()) if (src.piece().equals(p)) return s.item();
        return p.tensor();
    }

    /** Up to 5 items with a piece in {@code file}, for errors about the whole file. */
    private List<String> itemsIn(String file) {
        List<String> out = new ArrayList<>();
        for (LoadPlanner.ShardPlan s : plans)
            for (LoadPlanner.Source src : s.sources())
                if (src.piece().file().equals(file) && !out.contains(s.item()) && out.size() < 5) out.add(s.item());
        return out;
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception ignored) {
            // closing a reader of a file we failed to use
        }
    }

    @Override
    public void close() {
        for (OpenFile f : files.values()) {
            closeQuietly(f.header());
            closeQuietly(f.channel());
        }
        files.clear();
    }
}
