package dev.jtrain.checkpoint;

import dev.jtrain.tensor.io.SafetensorsLayout;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Storage side of a save: writes one rank's shard file from its staging buffer. The file follows every rule of the
 * safetensors format (as {@code SafetensorsReader} checks them), so safetensors tools can open it: a whole tensor is stored under its item name with its global
 * shape, a piece of one as {@code <item>@<first element>} with shape {@code [length]}.
 *
 * <p>Durability: bytes go to a temporary file in the step directory, then {@code fsync}, rename over the final name;
 * the coordinator fsyncs the step directory once before committing, which makes every rank's rename durable. The
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
     * Writes the shard file; {@code direct} asks for O_DIRECT (see {@link PosixWriter} and {@link #writePosix}), which
     * the data section's alignment ({@link #DATA_ALIGN}) allows.
     */
    static Written write(Path file, List<WriteItem> items, List<PlannedShard> local, Snapshot snapshot,
                         Map<String, String> headerMetadata, CheckpointerOptions settings) throws IOException {
        boolean direct = settings.directIo();
        MemorySegment staging = snapshot.staging();
        byte[] header = header(items, local, headerMetadata);
        long dataStart = SafetensorsLayout.HEADER_LENGTH_BYTES + header.length;
        long dataBytes = items.isEmpty() ? 0 : items.getLast().begin() + items.getLast().bytes();
        long[] crcs = snapshot.checksummed() ? snapshot.crc32c() : new long[items.size()];
        PieceCrcs crc = snapshot.checksummed() ? null : new PieceCrcs(items, crcs);
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        if (settings.nativeWriter() && PosixWriter.supported()) {
            try {
                writePosix(tmp, header, dataStart, dataBytes, snapshot, crc, direct);
            } catch (PosixWriter.DirectRefused e) {
                // O_TRUNC: the file from scratch, and so its CRCs
                writePosix(tmp, header, dataStart, dataBytes, snapshot, crc == null ? null : new PieceCrcs(items, crcs), false);
            }
            if (Files.size(tmp) != dataStart + dataBytes)
                throw new IOException("wrote " + Files.size(tmp) + " bytes to " + tmp + ", expected " + (dataStart + dataBytes));
            Durable.rename(tmp, file); // made durable by the coordinator's fsync of the step directory
            return new Written(dataStart + dataBytes, dataStart, crcs);
        }
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ByteBuffer h = ByteBuffer.allocate((int) dataStart).order(ByteOrder.LITTLE_ENDIAN);
            h.putLong(header.length).put(header).flip();
            writeFully(ch, h);
            for (long done = 0; done < dataBytes; done += CHUNK_BYTES) {
                long n = Math.min(CHUNK_BYTES, dataBytes - done);
                snapshot.awaitStaged(done + n);
                if (crc != null) crc.update(staging, done, n);
                writeFully(ch, staging.asSlice(done, n).asByteBuffer());
            }
            ch.force(true);
            if (ch.size() != dataStart + dataBytes)
                throw new IOException("wrote " + ch.size() + " bytes, expected " + (dataStart + dataBytes));
        }
        Durable.rename(tmp, file); // made durable by the coordinator's fsync of the step directory
        return new Written(dataStart + dataBytes, dataStart, crcs);
    }

    /**
     * Header, then the data in chunks; with O_DIRECT every chunk but the partial last block is aligned (the data
     * section starts on a 4 KiB boundary, staging is page-aligned, chunks are whole MiB), and that block goes through
     * an aligned bounce buffer, zero-padded, after which the file is cut back to its length.
     */
    private static void writePosix(Path tmp, byte[] header, long dataStart, long dataBytes, Snapshot snapshot,
                                   PieceCrcs crc, boolean direct) throws IOException {
        MemorySegment staging = snapshot.staging();
        try (PosixWriter out = new PosixWriter(tmp, direct); Arena a = Arena.ofConfined()) {
            MemorySegment h = a.allocate(dataStart, PosixWriter.DIRECT_ALIGN);
            h.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, header.length);
            MemorySegment.copy(header, 0, h, ValueLayout.JAVA_BYTE, SafetensorsLayout.HEADER_LENGTH_BYTES, header.length);
            out.write(h, 0);
            long whole = out.direct() ? dataBytes / PosixWriter.DIRECT_ALIGN * PosixWriter.DIRECT_ALIGN : dataBytes;
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
                MemorySegment block = a.allocate(PosixWriter.DIRECT_ALIGN, PosixWriter.DIRECT_ALIGN); // zeroed
                MemorySegment.copy(staging, whole, block, 0, tail);
                out.write(block, dataStart + whole);
                out.truncate(dataStart + dataBytes);
            }
            out.fsync();
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
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

    static void ensureDirectory(Path dir) throws IOException {
        Files.createDirectories(dir);
    }
}
