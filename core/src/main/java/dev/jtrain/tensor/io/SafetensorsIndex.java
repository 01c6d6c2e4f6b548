package dev.jtrain.tensor.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The validated header of a safetensors file read through positioned reads, without mapping the file: what a
 * reader needs to trust a tensor's byte range (dtype, shape, offsets) when the bytes themselves come from a
 * storage tier that is not a local file, or are read past the page cache.
 *
 * <p>Threading: immutable after {@link #read}.
 */
public final class SafetensorsIndex {
    /** A source of bytes at a position, e.g. {@link java.nio.channels.FileChannel#read(ByteBuffer, long)}. */
    @FunctionalInterface
    public interface PositionalRead {
        /** Reads into {@code dst} from {@code position}; returns bytes read, -1 at the end. */
        int read(ByteBuffer dst, long position) throws IOException;
    }

    private final Path file;
    private final SafetensorsHeader header;
    private final long dataStart;

    SafetensorsIndex(Path file, SafetensorsHeader header, long dataStart) {
        this.file = file;
        this.header = header;
        this.dataStart = dataStart;
    }

    /**
     * Reads and validates the header of a safetensors file of {@code size} bytes.
     *
     * @param file names the file in errors
     * @throws SafetensorsException if the header breaks any rule of the format or runs past {@code size}
     * @throws IOException if {@code read} fails
     */
    public static SafetensorsIndex read(Path file, long size, PositionalRead read) throws IOException {
        if (size < SafetensorsLayout.HEADER_LENGTH_BYTES)
            throw new SafetensorsException(file, null, "file is " + size + " bytes, shorter than the "
                    + SafetensorsLayout.HEADER_LENGTH_BYTES + "-byte header length; not a safetensors file");
        ByteBuffer len = readFully(file, read, 0, SafetensorsLayout.HEADER_LENGTH_BYTES);
        long n = len.order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        long dataStart = checkHeaderLength(file, n, size);
        byte[] json = new byte[(int) n];
        readFully(file, read, SafetensorsLayout.HEADER_LENGTH_BYTES, (int) n).get(0, json);
        return new SafetensorsIndex(file, SafetensorsHeader.parse(file, json, size - dataStart), dataStart);
    }

    /** The data section's start for a header of {@code n} bytes, after checking it fits a file of {@code size} bytes. */
    static long checkHeaderLength(Path file, long n, long size) {
        if (n < 0 || n > SafetensorsLayout.MAX_HEADER_BYTES)
            throw new SafetensorsException(file, null, "header length " + Long.toUnsignedString(n)
                    + " is outside [0, " + SafetensorsLayout.MAX_HEADER_BYTES + "]; file is corrupt or not safetensors");
        long dataStart = SafetensorsLayout.dataStart(n);
        if (dataStart > size)
            throw new SafetensorsException(file, null, "header length " + n + " runs past the end of the file (size="
                    + size + "); file is truncated");
        return dataStart;
    }

    private static ByteBuffer readFully(Path file, PositionalRead read, long position, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(length);
        while (b.hasRemaining()) {
            int n = read.read(b, position + b.position());
            if (n < 0)
                throw new SafetensorsException(file, null, "file ended " + (position + b.position()) + " bytes in, inside"
                        + " the header; file is truncated");
        }
        return b;
    }

    public Path file() {
        return file;
    }

    /** File offset of the data section: tensor {@code t}'s bytes start at {@code dataStart() + info(t).begin()}. */
    public long dataStart() {
        return dataStart;
    }

    /** Tensor names in the order their bytes appear in the file. */
    public List<String> names() {
        return List.copyOf(header.tensors().keySet());
    }

    public boolean contains(String name) {
        return header.tensors().containsKey(name);
    }

    /** The {@code __metadata__} map (empty if the file has none). */
    public Map<String, String> metadata() {
        return Collections.unmodifiableMap(header.metadata());
    }

    /** Dtype, shape and byte range of {@code name}; throws if the file has no such tensor. */
    public TensorInfo info(String name) {
        TensorInfo t = header.tensors().get(name);
        if (t == null)
            throw new SafetensorsException(file, name, "no such tensor; the file holds " + header.tensors().size()
                    + " tensors, e.g. " + header.tensors().keySet().stream().limit(5).toList());
        return t;
    }
}
