package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.tensor.io.SafetensorsLayout;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The shard-file format side of a save: writes one rank's shard file from its staging buffer into a
 * {@link ShardSink}. The file follows every rule of the
 * safetensors format (as {@code SafetensorsReader} checks them), so safetensors tools can open it: a whole tensor is stored under its item name with its global
 * shape, a piece of one as {@code <item>@<first element>} with shape {@code [length]}.
 *
 * <p>Durability is the storage's ({@link CheckpointStorage}: a sink publishes the file whole, the coordinator's
 * {@code syncStep} makes every rank's publish durable before the commit). The
 * staging buffer already holds the data section byte for byte, so the write is one sequential pass of large writes
 * (no per-tensor copies) that follows the {@link Snapshot} chunk by chunk; CRC32C (hardware instruction via the JDK
 * intrinsic) is computed per piece by the snapshot, or else in the same pass as the writes.
 */
final class ShardFileWriter {
    /** Large writes (fewer syscalls), small enough that write-back of one overlaps copying the next. */
    private static final long CHUNK_BYTES = 16L << 20;
    /** Where the data section starts: a multiple of this (the page and the largest logical block size). */
    static final int DATA_ALIGN = 4096;

    /** What was written: file size, where the data section starts, and each piece's CRC32C (in write order). */
    record Written(long fileBytes, long dataStart, long[] crc32c) {}

    private ShardFileWriter() {}

    /**
     * Writes the shard file {@code name} of {@code stepDir} through {@code storage}; {@code direct} asks for writes
     * past the page cache, which the data section's alignment ({@link #DATA_ALIGN}) allows. A sink that refuses them
     * after all is replaced by a buffered one and the file written again.
     */
    static Written write(CheckpointStorage storage, Path stepDir, String name, List<WriteItem> items, List<PlannedShard> local,
                         Snapshot snapshot, Map<String, String> headerMetadata, boolean direct) throws IOException {
        byte[] header = header(items, local, headerMetadata);
        long dataStart = SafetensorsLayout.HEADER_LENGTH_BYTES + header.length;
        long dataBytes = items.isEmpty() ? 0 : items.getLast().begin() + items.getLast().bytes();
        long[] crcs = snapshot.checksummed() ? snapshot.crc32c() : new long[items.size()];
        ShardSink out = storage.createShard(stepDir, name, direct);
        try {
            try {
                writeTo(out, header, dataStart, dataBytes, snapshot, snapshot.checksummed() ? null : new PieceCrcs(items, crcs));
            } catch (ShardSink.DirectRefused e) {
                out.close();
                out = storage.createShard(stepDir, name, false); // from scratch, and so its CRCs
                writeTo(out, header, dataStart, dataBytes, snapshot, snapshot.checksummed() ? null : new PieceCrcs(items, crcs));
            }
            if (out.size() != dataStart + dataBytes)
                throw new IOException("wrote " + out.size() + " bytes of shard " + stepDir.resolve(name) + ", expected " + (dataStart + dataBytes));
            out.publish(); // made durable by the coordinator's syncStep
        } finally {
            out.close();
        }
        return new Written(dataStart + dataBytes, dataStart, crcs);
    }

    /**
     * Header, then the data in chunks that follow the snapshot; with direct writes every chunk but the partial last
     * block is aligned (the data section starts on a 4 KiB boundary, staging is page-aligned, chunks are whole MiB),
     * and that block goes through an aligned bounce buffer, zero-padded, after which the file is cut back to its length.
     */
    private static void writeTo(ShardSink out, byte[] header, long dataStart, long dataBytes, Snapshot snapshot,
                                PieceCrcs crc) throws IOException {
        MemorySegment staging = snapshot.staging();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate(dataStart, ShardSink.DIRECT_ALIGN);
            h.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, header.length);
            MemorySegment.copy(header, 0, h, ValueLayout.JAVA_BYTE, SafetensorsLayout.HEADER_LENGTH_BYTES, header.length);
            out.write(h, 0);
            long whole = out.direct() ? dataBytes / ShardSink.DIRECT_ALIGN * ShardSink.DIRECT_ALIGN : dataBytes;
            for (long done = 0; done < whole; done += CHUNK_BYTES) {
                long n = Math.min(CHUNK_BYTES, whole - done);
                snapshot.awaitStaged(done + n); // writes follow the copy into staging chunk by chunk
                if (crc != null) crc.update(staging, done, n);
                out.write(staging.asSlice(done, n), dataStart + done); // buffered: its write-back starts now
            }
            if (whole < dataBytes) {
                long tail = dataBytes - whole;
                snapshot.awaitStaged(dataBytes);
                if (crc != null) crc.update(staging, whole, tail);
                MemorySegment block = a.allocate(ShardSink.DIRECT_ALIGN, ShardSink.DIRECT_ALIGN); // zeroed
                MemorySegment.copy(staging, whole, block, 0, tail);
                out.write(block, dataStart + whole);
                out.truncate(dataStart + dataBytes);
            }
        }
    }

    /**
     * The safetensors header, padded with spaces (which the format allows) so the data section starts on a 4 KiB
     * boundary: direct I/O can write it, and a reader that maps the file gets page-aligned tensors.
     */
    static byte[] header(List<WriteItem> items, List<PlannedShard> local, Map<String, String> headerMetadata) {
        ObjectNode root = Json.MAPPER.createObjectNode();
        ObjectNode meta = root.putObject(SafetensorsLayout.METADATA_KEY);
        headerMetadata.forEach(meta::put);
        for (WriteItem w : items) {
            PlannedShard s = local.get(w.localIndex());
            ObjectNode t = root.putObject(w.tensor());
            t.put("dtype", s.dtype());
            var shape = t.putArray("shape");
            if (s.whole()) for (long d : s.shape()) shape.add(d);
            else shape.add(s.length());
            t.putArray("data_offsets").add(w.begin()).add(w.begin() + w.bytes());
        }
        byte[] json = root.toString().getBytes(StandardCharsets.UTF_8);
        int align = DATA_ALIGN;
        int padded = (json.length + SafetensorsLayout.HEADER_LENGTH_BYTES + align - 1) / align * align - SafetensorsLayout.HEADER_LENGTH_BYTES;
        byte[] out = Arrays.copyOf(json, padded);
        Arrays.fill(out, json.length, padded, (byte) ' ');
        return out;
    }
}
