package dev.jtrain.tensor.io;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

/**
 * Reads a safetensors file through one read-only memory mapping (see {@link SafetensorsLayout}).
 * Opening validates the whole header up front, so every later read is of a range known to be in
 * the file; tensors are converted to fp32 (or int32) only as they are read, so a loader can stream a
 * large checkpoint into a flat parameter buffer without a second copy of the file in heap.
 *
 * <p>The mapping is a {@link MemorySegment} rather than a {@code MappedByteBuffer}, so files larger
 * than 2 GiB (GPT-2 XL is ~6 GB) work.
 *
 * <p>Threading: after {@link #open} returns, reads may run concurrently from any threads. {@link #close()}
 * unmaps the file and must not race with reads.
 */
public final class SafetensorsReader implements AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Elements converted per chunk for types that need a temporary (F16, BF16, F64, narrow ints). */
    private static final int CHUNK = 8192;

    private final Path file;
    private final Arena arena;
    private final MemorySegment data;
    private final SafetensorsIndex index;

    private SafetensorsReader(Path file, Arena arena, MemorySegment data, SafetensorsIndex index) {
        this.file = file;
        this.arena = arena;
        this.data = data;
        this.index = index;
    }

    /**
     * Maps {@code file} and validates its header.
     *
     * @throws SafetensorsException if the file cannot be read or breaks any rule of the format
     */
    public static SafetensorsReader open(Path file) {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < SafetensorsLayout.HEADER_LENGTH_BYTES)
                throw new SafetensorsException(file, null, "file is " + size + " bytes, shorter than the "
                        + SafetensorsLayout.HEADER_LENGTH_BYTES + "-byte header length; not a safetensors file");
            MemorySegment whole = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            long n = whole.get(I64, 0);
            long dataStart = SafetensorsIndex.checkHeaderLength(file, n, size);
            byte[] json = whole.asSlice(SafetensorsLayout.HEADER_LENGTH_BYTES, n).toArray(ValueLayout.JAVA_BYTE);
            SafetensorsIndex index = new SafetensorsIndex(file, SafetensorsHeader.parse(file, json, size - dataStart), dataStart);
            return new SafetensorsReader(file, arena, whole.asSlice(dataStart).asReadOnly(), index);
        } catch (IOException e) {
            arena.close();
            throw new SafetensorsException(file, null, "cannot read: " + e, e);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    public Path file() {
        return file;
    }

    /** File offset of the data section: tensor {@code t}'s bytes start at {@code dataStart() + info(t).begin()}. */
    public long dataStart() {
        return index.dataStart();
    }

    /** Tensor names in the order their bytes appear in the file. */
    public List<String> names() {
        return index.names();
    }

    public boolean contains(String name) {
        return index.contains(name);
    }

    /** Dtype, shape and byte range of {@code name}; throws if the file has no such tensor. */
    public TensorInfo info(String name) {
        return index.info(name);
    }

    /** The {@code __metadata__} map (empty if the file has none). */
    public Map<String, String> metadata() {
        return index.metadata();
    }

    /** The raw little-endian bytes of {@code name}, as a read-only slice of the mapping (valid until {@link #close()}). */
    public MemorySegment bytes(String name) {
        TensorInfo t = info(name);
        return data.asSlice(t.begin(), t.byteLength());
    }

    /** Reads the whole tensor as fp32 into a new array. */
    public float[] readFloats(String name) {
        float[] dst = new float[checkedIntNumel(name)];
        readFloats(name, dst, 0);
        return dst;
    }

    /** Reads the whole tensor as fp32 into {@code dst[off, off + numel)}; F16, BF16 and F64 are converted. */
    public void readFloats(String name, float[] dst, int off) {
        readFloats(name, 0, dst, off, checkedIntNumel(name));
    }

    /**
     * Reads {@code count} elements starting at flat (row-major) element {@code first} as fp32 into
     * {@code dst[off, off + count)}. Lets a sharded loader take just its slice of a large tensor.
     */
    public void readFloats(String name, long first, float[] dst, int off, int count) {
        TensorInfo t = info(name);
        if (!t.dtype().isFloatingPoint())
            throw new SafetensorsException(file, name, "dtype " + t.dtype() + " is not floating point; use readInts");
        checkRange(name, t, first, dst.length, off, count);
        long base = t.begin() + first * t.dtype().byteSize();
        switch (t.dtype()) {
            case F32 -> MemorySegment.copy(data, F32, base, dst, off, count);
            case F64 -> {
                double[] tmp = new double[Math.min(CHUNK, count)];
                for (int done = 0; done < count; done += tmp.length) {
                    int n = Math.min(tmp.length, count - done);
                    MemorySegment.copy(data, F64, base + 8L * done, tmp, 0, n);
                    for (int i = 0; i < n; i++) dst[off + done + i] = (float) tmp[i];
                }
            }
            case F16, BF16 -> {
                boolean bf16 = t.dtype() == SafetensorsDType.BF16;
                short[] tmp = new short[Math.min(CHUNK, count)];
                for (int done = 0; done < count; done += tmp.length) {
                    int n = Math.min(tmp.length, count - done);
                    MemorySegment.copy(data, I16, base + 2L * done, tmp, 0, n);
                    // bf16 is the top half of an fp32 bit pattern; fp16 needs a real conversion (IEEE binary16).
                    if (bf16) for (int i = 0; i < n; i++) dst[off + done + i] = Float.intBitsToFloat((tmp[i] & 0xffff) << 16);
                    else for (int i = 0; i < n; i++) dst[off + done + i] = Float.float16ToFloat(tmp[i]);
                }
            }
            default -> throw new IllegalStateException("unhandled float dtype " + t.dtype());
        }
    }

    /** Reads the whole integer tensor as int32 into a new array. */
    public int[] readInts(String name) {
        int[] dst = new int[checkedIntNumel(name)];
        readInts(name, dst, 0);
        return dst;
    }

    /**
     * Reads an integer (or BOOL) tensor as int32 into {@code dst[off, off + numel)}. I64, U32 and U64 values
     * outside the int range are an error rather than silently wrapped (token ids and indices must be exact).
     */
    public void readInts(String name, int[] dst, int off) {
        TensorInfo t = info(name);
        if (!t.dtype().isInteger())
            throw new SafetensorsException(file, name, "dtype " + t.dtype() + " is not an integer type; use readFloats");
        int count = checkedIntNumel(name);
        checkRange(name, t, 0, dst.length, off, count);
        long base = t.begin();
        switch (t.dtype()) {
            case I32 -> MemorySegment.copy(data, I32, base, dst, off, count);
            case U32 -> {
                MemorySegment.copy(data, I32, base, dst, off, count);
                for (int i = 0; i < count; i++)
                    if (dst[off + i] < 0) throw outOfIntRange(name, i, Integer.toUnsignedString(dst[off + i]));
            }
            case I64, U64 -> {
                boolean unsigned = t.dtype() == SafetensorsDType.U64;
                for (int i = 0; i < count; i++) {
                    long v = data.get(I64, base + 8L * i);
                    if ((unsigned && (v < 0 || v > Integer.MAX_VALUE)) || v != (int) v)
                        throw outOfIntRange(name, i, unsigned ? Long.toUnsignedString(v) : Long.toString(v));
                    dst[off + i] = (int) v;
                }
            }
            case I16 -> { for (int i = 0; i < count; i++) dst[off + i] = data.get(I16, base + 2L * i); }
            case U16 -> { for (int i = 0; i < count; i++) dst[off + i] = data.get(I16, base + 2L * i) & 0xffff; }
            case I8 -> { for (int i = 0; i < count; i++) dst[off + i] = data.get(ValueLayout.JAVA_BYTE, base + i); }
            case U8, BOOL -> { for (int i = 0; i < count; i++) dst[off + i] = data.get(ValueLayout.JAVA_BYTE, base + i) & 0xff; }
            default -> throw new IllegalStateException("unhandled integer dtype " + t.dtype());
        }
    }

    private SafetensorsException outOfIntRange(String name, int index, String value) {
        return new SafetensorsException(file, name, "element " + index + " = " + value + " does not fit in int32");
    }

    private int checkedIntNumel(String name) {
        long n = info(name).numel();
        if (n > Integer.MAX_VALUE - 8)
            throw new SafetensorsException(file, name, "has " + n + " elements, more than one Java array holds; "
                    + "read it in slices with readFloats(name, first, dst, off, count)");
        return (int) n;
    }

    private void checkRange(String name, TensorInfo t, long first, int dstLength, int off, int count) {
        if (first < 0 || count < 0 || first + count > t.numel())
            throw new IllegalArgumentException("element range out of tensor: tensor=" + name + ", first=" + first
                    + ", count=" + count + ", numel=" + t.numel() + ", file=" + file);
        if (off < 0 || off > dstLength - count)
            throw new IllegalArgumentException("destination too small: tensor=" + name + ", off=" + off + ", count="
                    + count + ", dst.length=" + dstLength);
    }

    /** Unmaps the file. Segments returned by {@link #bytes} become invalid. */
    @Override
    public void close() {
        arena.close();
    }
}
