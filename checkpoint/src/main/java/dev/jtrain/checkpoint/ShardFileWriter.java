package dev.jtrain.checkpoint;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.jtrain.tensor.io.SafetensorsLayout;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Storage side of a save: writes one rank's shard file from its staging buffer. The file follows every rule of the
 * safetensors format (as {@code SafetensorsReader} checks them), so safetensors tools can open it: a whole tensor is stored under its item name with its global
 * shape, a piece of one as {@code <item>@<first element>} with shape {@code [length]}.
 *
 * <p>Durability: bytes go to a temporary file in the step directory, then {@code fsync}, rename over the final name;
 * the coordinator fsyncs the step directory once before committing, which makes every rank's rename durable. The
 * staging buffer already holds the data section byte for byte, so the write is one sequential pass of large writes
 * (no per-tensor copies); CRC32C (hardware instruction via the JDK intrinsic) is computed per piece in the same pass.
 */
final class ShardFileWriter {
    /** Large writes (fewer syscalls), small enough that write-back of one overlaps copying the next. */
    private static final long CHUNK_BYTES = 16L << 20;

    /** What was written: file size, where the data section starts, and each piece's CRC32C (in write order). */
    record Written(long fileBytes, long dataStart, long[] crc32c) {}

    private ShardFileWriter() {}

    static Written write(Path file, List<WriteItem> items, List<PlannedShard> local, MemorySegment staging,
                         Map<String, String> headerMetadata) throws IOException {
        byte[] header = header(items, local, headerMetadata);
        long dataStart = SafetensorsLayout.HEADER_LENGTH_BYTES + header.length;
        long dataBytes = items.isEmpty() ? 0 : items.getLast().begin() + items.getLast().bytes();
        long[] crcs = new long[items.size()];
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        if (PosixWriter.available()) {
            try (PosixWriter out = new PosixWriter(tmp); java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
                MemorySegment h = a.allocate(dataStart);
                h.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, header.length);
                MemorySegment.copy(header, 0, h, java.lang.foreign.ValueLayout.JAVA_BYTE, SafetensorsLayout.HEADER_LENGTH_BYTES, header.length);
                out.write(h, 0);
                CRC32C crc = new CRC32C();
                for (int i = 0; i < items.size(); i++) {
                    WriteItem w = items.get(i);
                    crc.reset();
                    for (long done = 0; done < w.bytes(); done += CHUNK_BYTES) {
                        MemorySegment chunk = staging.asSlice(w.begin() + done, Math.min(CHUNK_BYTES, w.bytes() - done));
                        crc.update(chunk.asByteBuffer());
                        out.write(chunk, dataStart + w.begin() + done); // write-back of this chunk starts now
                    }
                    crcs[i] = crc.getValue();
                }
                out.fsync();
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
            CRC32C crc = new CRC32C();
            for (int i = 0; i < items.size(); i++) {
                WriteItem w = items.get(i);
                crc.reset();
                for (long done = 0; done < w.bytes(); done += CHUNK_BYTES) {
                    long n = Math.min(CHUNK_BYTES, w.bytes() - done);
                    ByteBuffer bb = staging.asSlice(w.begin() + done, n).asByteBuffer();
                    crc.update(bb.duplicate());
                    writeFully(ch, bb);
                }
                crcs[i] = crc.getValue();
            }
            ch.force(true);
            if (ch.size() != dataStart + dataBytes)
                throw new IOException("wrote " + ch.size() + " bytes, expected " + (dataStart + dataBytes));
        }
        Durable.rename(tmp, file); // made durable by the coordinator's fsync of the step directory
        return new Written(dataStart + dataBytes, dataStart, crcs);
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** The safetensors header, padded with spaces so the data section is 8-byte aligned. */
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
        int align = SafetensorsLayout.ALIGNMENT_BYTES;
        int padded = (json.length + SafetensorsLayout.HEADER_LENGTH_BYTES + align - 1) / align * align - SafetensorsLayout.HEADER_LENGTH_BYTES;
        byte[] out = java.util.Arrays.copyOf(json, padded);
        java.util.Arrays.fill(out, json.length, padded, (byte) ' ');
        return out;
    }

    static void ensureDirectory(Path dir) throws IOException {
        Files.createDirectories(dir);
    }
}
