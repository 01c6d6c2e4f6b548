package dev.jtrain.checkpoint;

import java.util.Arrays;

/**
 * One piece of state a rank holds, as the planner sees it: elements [offset, offset + length) of the row-major
 * flattening of item {@code item} (global shape {@code shape}, element type {@code dtype}).
 *
 * @param item       {@code <state key>/<tensor name>}, e.g. {@code model/transformer.wte.weight}
 * @param replicated other ranks hold identical values of this range (all of them under DDP, one per host under hybrid
 *                   sharding): one copy is written, by the least loaded holder
 */
public record PlannedShard(String item, long[] shape, String dtype, long offset, long length, boolean replicated) {
    public PlannedShard {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long bytes() {
        return 4 * length; // fp32 only: TensorShard holds float[]
    }

    public long numel() {
        long n = 1;
        for (long d : shape) n *= d;
        return n;
    }

    /** True when this piece is its whole tensor. */
    public boolean whole() {
        return offset == 0 && length == numel();
    }

    /** Identity of the bytes (not of the holder): replicas of one piece share it. */
    String rangeKey() {
        return item + "@" + offset + "+" + length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PlannedShard p && item.equals(p.item) && Arrays.equals(shape, p.shape) && dtype.equals(p.dtype)
                && offset == p.offset && length == p.length && replicated == p.replicated;
    }

    @Override
    public int hashCode() {
        return ((item.hashCode() * 31 + Arrays.hashCode(shape)) * 31 + Long.hashCode(offset)) * 31 + Long.hashCode(length);
    }

    @Override
    public String toString() {
        return item + Arrays.toString(shape) + ":" + dtype + "[" + offset + "," + (offset + length) + ")" + (replicated ? "R" : "");
    }
}
