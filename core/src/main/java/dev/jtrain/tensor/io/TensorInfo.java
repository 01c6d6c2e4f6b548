package dev.jtrain.tensor.io;

import java.util.Arrays;

/**
 * Where one tensor lives in a safetensors file.
 *
 * @param dtype element type as stored
 * @param shape dimensions, outermost first (row-major); empty for a scalar
 * @param begin first byte, relative to the start of the data section (as in the header)
 * @param end   one past the last byte, relative to the start of the data section
 */
public record TensorInfo(SafetensorsDType dtype, long[] shape, long begin, long end) {
    public TensorInfo {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** Number of elements: the product of the shape (1 for a scalar). */
    public long numel() {
        long n = 1;
        for (long d : shape) n = Math.multiplyExact(n, d);
        return n;
    }

    public long byteLength() {
        return end - begin;
    }

    public int rank() {
        return shape.length;
    }

    /** Size of dimension {@code i}. */
    public long dim(int i) {
        return shape[i];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorInfo t && dtype == t.dtype && begin == t.begin && end == t.end
                && Arrays.equals(shape, t.shape);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * dtype.hashCode() + Arrays.hashCode(shape)) + Long.hashCode(begin);
    }

    @Override
    public String toString() {
        return "TensorInfo[dtype=" + dtype + ", shape=" + Arrays.toString(shape) + ", begin=" + begin + ", end=" + end + "]";
    }
}
