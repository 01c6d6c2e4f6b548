package dev.jtrain.tensor.state;

import java.util.Arrays;

/**
 * This rank's piece of a logical fp32 tensor, as checkpointing and resharding see it: elements
 * [globalOffset, globalOffset + length) of the row-major flattening of a tensor of shape {@code globalShape}, held live
 * in {@code data[dataOffset, dataOffset + length)}. Flat ranges describe every layout jtrain has: a whole tensor
 * (single process), a replicated one (DDP parameters and optimizer state: {@code replicated} = other ranks hold
 * identical values of this same range, every data-parallel rank under DDP, one per host under hybrid sharding, so
 * one copy need be written), and ZeRO's bucket shards, which cut tensors at arbitrary
 * element boundaries (as DCP's flat sharding of FSDP parameters does).
 *
 * <p>Loading writes into {@code data} in place, so the live model/optimizer buffers are updated without copies.
 */
public record TensorShard(String name, long[] globalShape, long globalOffset, float[] data, int dataOffset, int length,
                          boolean replicated) {
    public TensorShard {
        long numel = 1;
        for (long d : globalShape) numel *= d;
        if (globalOffset < 0 || length < 0 || globalOffset + length > numel)
            throw new IllegalArgumentException("shard outside its tensor: name=" + name + ", shape=" + Arrays.toString(globalShape)
                    + ", globalOffset=" + globalOffset + ", length=" + length);
        if (dataOffset < 0 || dataOffset + length > data.length)
            throw new IllegalArgumentException("shard outside its buffer: name=" + name + ", dataOffset=" + dataOffset
                    + ", length=" + length + ", buffer=" + data.length);
        globalShape = globalShape.clone();
    }

    public long globalNumel() {
        long n = 1;
        for (long d : globalShape) n *= d;
        return n;
    }

    @Override
    public long[] globalShape() {
        return globalShape.clone();
    }
}
