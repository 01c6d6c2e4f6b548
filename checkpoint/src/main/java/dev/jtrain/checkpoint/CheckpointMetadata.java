package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.checkpoint.storage.posix.PosixStorage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * {@code metadata.json} of one checkpoint: written by the coordinator last, after every rank reported its shard file
 * durable, so its presence is what "committed" means. Versioned JSON (Jackson), no Java serialization:
 * <pre>
 * { "format": "jtrain-checkpoint", "version": 1, "step": 123, "worldSize": 2, "createdUtc": "...",
 *   "items": { "model/wte.weight": { "dtype": "F32", "shape": [256, 64],
 *              "pieces": [ { "offset": 0, "length": 16384, "file": "rank-00001.safetensors", "tensor": "model/wte.weight",
 *                            "fileOffset": 1234, "byteLength": 65536, "crc32c": "1a2b3c4d", "writer": 1 } ] } },
 *   "state": { "optimizer": [ {"optimizer.step": "123"}, ... one map per rank ] },
 *   "files": { "rank-00000.safetensors": { "rank": 0, "bytes": 4194560 } },
 *   "layout": [ { "rank": 0, "worldSize": 2, "shards": [ ...what rank 0 held... ] }, ... ] }
 * </pre>
 * {@code offset}/{@code length} are elements of the item's row-major flattening; {@code fileOffset}/{@code byteLength}
 * are absolute bytes in the file, so any tool can read a piece with one seek. Written with the module's mapper, read
 * with {@link MetadataReader}.
 */
public record CheckpointMetadata(String format, int version, long step, int worldSize, String createdUtc,
                                 Map<String, Item> items, Map<String, List<Map<String, String>>> state,
                                 Map<String, FileEntry> files, List<LocalPlan> layout) {
    public static final String FORMAT = "jtrain-checkpoint";
    public static final int VERSION = 1;

    /** One logical tensor and where its pieces are. */
    public record Item(String dtype, long[] shape, List<Piece> pieces) {
        public long numel() {
            long n = 1;
            for (long d : shape) n *= d;
            return n;
        }
    }

    /** Elements [offset, offset + length) of an item, stored as {@code tensor} in {@code file}. */
    public record Piece(long offset, long length, String file, String tensor, long fileOffset, long byteLength,
                        String crc32c, int writer) {}

    public record FileEntry(int rank, long bytes) {}

    /** Reads the metadata of a step directory on a POSIX file system. */
    public static CheckpointMetadata read(Path stepDir) {
        return read(new PosixStorage(false), stepDir);
    }

    /** Reads and checks the committed metadata of {@code stepDir} from {@code storage}. */
    public static CheckpointMetadata read(CheckpointStorage storage, Path stepDir) {
        byte[] bytes;
        try {
            bytes = storage.readMetadata(stepDir);
        } catch (NoSuchFileException e) {
            throw new CheckpointCorruptException(stepDir, "checkpoint " + stepDir + " is not committed (no " + CheckpointDirectory.METADATA
                    + "): it is incomplete or was interrupted; load an earlier step or the one 'latest' names", e);
        } catch (IOException e) { // the storage failed, not the checkpoint: not corrupt (a fallback would skip a good one)
            throw new CheckpointException("cannot read the metadata of " + stepDir + ": " + e, e);
        }
        String f = stepDir.resolve(CheckpointDirectory.METADATA).toString();
        CheckpointMetadata m;
        try {
            m = MetadataReader.read(bytes);
        } catch (CheckpointException e) {
            throw new CheckpointCorruptException(stepDir, "metadata file " + f + " is corrupt: " + e.getMessage(), e);
        }
        if (!FORMAT.equals(m.format()))
            throw new CheckpointCorruptException(stepDir, "metadata file " + f + " has format '" + m.format() + "', expected '" + FORMAT + "'", null);
        if (m.version() > VERSION)
            throw new CheckpointException("metadata file " + f + " has version " + m.version() + "; this jtrain reads up to "
                    + VERSION + " (upgrade jtrain)");
        return m;
    }

    public long totalBytes() {
        long b = 0;
        for (FileEntry f : files.values()) b += f.bytes();
        return b;
    }
}
