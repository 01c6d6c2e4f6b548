package dev.jtrain.comm;

/**
 * Element types a collective can carry. Buffers are little-endian (the platform order on every JVM target we run on).
 *
 * <p>{@link #BFLOAT16} elements are the upper 16 bits of an IEEE float32; reductions decode to float32, combine, and
 * round to nearest even. It is mainly a <em>wire format</em>: {@link ProcessGroup#allReduceBf16Wire} compresses a
 * float32 buffer to bfloat16 for the exchange and expands the result back (the idea of PyTorch's
 * {@code bf16_compress_hook}: half the bytes on the wire, ~3 significant decimal digits kept).
 */
public enum DType {
    FLOAT32(4), FLOAT64(8), INT32(4), INT64(8), BFLOAT16(2);

    private final int byteSize;

    DType(int byteSize) { this.byteSize = byteSize; }

    /** Bytes per element. */
    public int byteSize() { return byteSize; }

    /** Bytes needed for {@code count} elements, checked against overflow. */
    public long bytes(long count) {
        if (count < 0) throw new IllegalArgumentException("count must be >= 0: count=" + count + " dtype=" + this);
        return Math.multiplyExact(count, (long) byteSize);
    }
}
