package dev.jtrain.tensor.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

/**
 * Collects named fp32 (and int32) arrays and writes them as one safetensors file (see {@link SafetensorsLayout}).
 * Tensors are laid out in the order they were added; the header is padded with spaces to a multiple of
 * 8 bytes so the data section is aligned when mapped.
 *
 * <p>The file appears atomically: bytes go to a temporary file in the same directory, which is fsynced and
 * then renamed over the target (and the directory fsynced), so a crash leaves either the old file or the
 * complete new one, never a torn checkpoint.
 *
 * <p>The writer keeps references to the arrays passed to {@code put}, not copies (a model's flat
 * parameter buffer can be saved as slices without doubling memory); do not modify them before
 * {@link #write}. Not thread-safe.
 */
public final class SafetensorsWriter {
    private static final int BUFFER_BYTES = 1 << 20;

    /** {@code later}: the floats are made only when the entry is written ({@link #putLater}). */
    private record Entry(long[] shape, SafetensorsDType dtype, float[] floats, int[] ints, int off, int len,
                         Supplier<float[]> later) {
    }

    private final Map<String, Entry> entries = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();

    /** Adds an F32 tensor holding {@code data[off, off + len)}; {@code len} must equal the product of {@code shape}. */
    public SafetensorsWriter put(String name, long[] shape, float[] data, int off, int len) {
        check(name, shape, data.length, off, len);
        entries.put(name, new Entry(shape.clone(), SafetensorsDType.F32, data, null, off, len, null));
        return this;
    }

    /** Adds an F32 tensor holding all of {@code data}. */
    public SafetensorsWriter put(String name, long[] shape, float[] data) {
        return put(name, shape, data, 0, data.length);
    }

    /**
     * Adds an F32 tensor whose values {@code data} makes while the file is written, one tensor at a time: saving a
     * model whose tensors must be converted (transposed, gathered) then holds one converted tensor, not all of them.
     * The array it returns must have the shape's element count.
     */
    public SafetensorsWriter putLater(String name, long[] shape, Supplier<float[]> data) {
        long numel = 1;
        for (long d : shape) numel = Math.multiplyExact(numel, Math.max(0, d));
        int len = Math.toIntExact(numel);
        check(name, shape, len, 0, len);
        entries.put(name, new Entry(shape.clone(), SafetensorsDType.F32, null, null, 0, len, Objects.requireNonNull(data, "data")));
        return this;
    }

    /** Adds an I32 tensor holding {@code data[off, off + len)} (token ids, indices). */
    public SafetensorsWriter putInts(String name, long[] shape, int[] data, int off, int len) {
        check(name, shape, data.length, off, len);
        entries.put(name, new Entry(shape.clone(), SafetensorsDType.I32, null, data, off, len, null));
        return this;
    }

    /** Adds a {@code __metadata__} entry (e.g. "format" -> "pt"). */
    public SafetensorsWriter metadata(String key, String value) {
        metadata.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return this;
    }

    private void check(String name, long[] shape, int arrayLength, int off, int len) {
        if (name == null || name.isEmpty() || name.equals(SafetensorsLayout.METADATA_KEY))
            throw new IllegalArgumentException("invalid tensor name: name=" + name);
        if (entries.containsKey(name))
            throw new IllegalArgumentException("duplicate tensor name: name=" + name);
        long numel = 1;
        for (long d : shape) {
            if (d < 0) throw new IllegalArgumentException("negative dimension: name=" + name + ", shape=" + Arrays.toString(shape));
            numel = Math.multiplyExact(numel, d);
        }
        if (numel != len)
            throw new IllegalArgumentException("shape does not match length: name=" + name + ", shape="
                    + Arrays.toString(shape) + ", numel=" + numel + ", len=" + len);
        if (off < 0 || len < 0 || off > arrayLength - len)
            throw new IllegalArgumentException("slice out of array: name=" + name + ", off=" + off + ", len=" + len
                    + ", array.length=" + arrayLength);
    }

    /**
     * Writes the file atomically.
     *
     * @throws SafetensorsException naming the file if anything fails; the target is then left untouched
     */
    public void write(Path file) {
        Map<String, TensorInfo> infos = new LinkedHashMap<>();
        long offset = 0;
        for (var e : entries.entrySet()) {
            long bytes = (long) e.getValue().len() * e.getValue().dtype().byteSize();
            infos.put(e.getKey(), new TensorInfo(e.getValue().dtype(), e.getValue().shape(), offset, offset + bytes));
            offset += bytes;
        }
        byte[] json = SafetensorsHeader.toJson(infos, metadata);
        int align = SafetensorsLayout.ALIGNMENT_BYTES;
        int headerBytes = (json.length + align - 1) / align * align;

        Path abs = file.toAbsolutePath();
        Path dir = abs.getParent();
        Path tmp = null;
        try {
            Files.createDirectories(dir);
            // not Files.createTempFile: that makes the file 0600, and the renamed checkpoint should get the usual umask
            tmp = dir.resolve("." + abs.getFileName() + ".tmp-" + Long.toHexString(ThreadLocalRandom.current().nextLong()));
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.allocateDirect(Math.max(BUFFER_BYTES, 16 + headerBytes)).order(ByteOrder.LITTLE_ENDIAN);
                buf.putLong(headerBytes).put(json);
                for (int i = json.length; i < headerBytes; i++) buf.put((byte) ' ');
                for (var e : entries.entrySet()) {
                    try {
                        writeEntry(ch, buf, e.getValue());
                    } catch (RuntimeException made) { // a tensor made while writing (putLater) failed
                        throw new SafetensorsException(file, e.getKey(), "cannot make the tensor: " + made.getMessage(), made);
                    }
                }
                drain(ch, buf);
                ch.force(true);
            }
            DurableFiles.moveAtomically(tmp, abs);
            tmp = null;
            DurableFiles.fsyncDirectory(dir);
        } catch (IOException e) {
            throw new SafetensorsException(file, null, "cannot write: " + e, e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // best effort: the write already failed and says so
                }
            }
        }
    }

    private static void writeEntry(FileChannel ch, ByteBuffer buf, Entry e) throws IOException {
        if (e.later() != null) {
            float[] made = e.later().get();
            if (made.length != e.len())
                throw new IllegalStateException("tensor made while writing has " + made.length + " values, its shape " + Arrays.toString(e.shape()) + " needs " + e.len());
            e = new Entry(e.shape(), e.dtype(), made, null, 0, e.len(), null);
        }
        int done = 0;
        while (done < e.len()) {
            if (buf.remaining() < 4) drain(ch, buf);
            int n = Math.min(e.len() - done, buf.remaining() / 4);
            int pos = buf.position();
            if (e.floats() != null) buf.asFloatBuffer().put(e.floats(), e.off() + done, n);
            else buf.asIntBuffer().put(e.ints(), e.off() + done, n);
            buf.position(pos + 4 * n);
            done += n;
        }
    }

    private static void drain(FileChannel ch, ByteBuffer buf) throws IOException {
        buf.flip();
        while (buf.hasRemaining()) ch.write(buf);
        buf.clear();
    }
}
