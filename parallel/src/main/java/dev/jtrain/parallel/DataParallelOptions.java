package dev.jtrain.parallel;

import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.optim.AdamW;
import dev.jtrain.optim.Optimizer;

/**
 * @param bucketBytes      cap of every bucket after the first, or {@link #AUTO_BUCKET} to size it from the group's
 *                         slowest link ({@link BucketPlan#autoBucketBytes}); PyTorch's fixed default is 25 MiB
 * @param firstBucketBytes cap of the first bucket, small so that communication starts early (PyTorch: 1 MiB)
 * @param zeroStage        0 = DDP (replicated optimizer), 1 = sharded optimizer state, 2 = also sharded gradients,
 *                         3 = also sharded parameters (FSDP; needs a {@link dev.jtrain.nn.ShardedModel})
 * @param overlap          launch collectives from backward hooks (true) or only after backward (false, for comparison)
 * @param optimizer        the element-wise update every strategy applies to its parameters or shard (AdamW by default)
 * @param gradWire         the element type gradients travel in: {@link GradWire#FP32}, or {@link GradWire#BF16} for
 *                         half the bytes on networks slower than the model needs (PyTorch's {@code bf16_compress_hook})
 * @param shardWithin      the ranks ZeRO shards across: the whole group, or each host with replicas across hosts
 *                         (hybrid sharding, {@link ShardScope#HOST}; ZeRO stages 1 to 3 only)
 * @param gradReduce       the order gradients are summed in: the cost model's pick, or one fixed order that keeps a
 *                         job bitwise the same on fewer ranks ({@link GradReduce#ORDERED}; DDP, float32 traffic)
 */
public record DataParallelOptions(long bucketBytes, long firstBucketBytes, int zeroStage, boolean overlap,
                                  Optimizer optimizer, GradWire gradWire, ShardScope shardWithin, GradReduce gradReduce) {
    /** {@code bucketBytes} to be chosen from the process group's measured link speed. */
    public static final long AUTO_BUCKET = 0;

    public DataParallelOptions {
        if (zeroStage < 0 || zeroStage > 3) throw new IllegalArgumentException("zeroStage must be 0, 1, 2 or 3: " + zeroStage);
        if ((bucketBytes < 64 && bucketBytes != AUTO_BUCKET) || firstBucketBytes < 64)
            throw new IllegalArgumentException("bucket sizes must be >= 64 bytes: bucketBytes=" + bucketBytes + ", firstBucketBytes=" + firstBucketBytes);
        if (gradWire == null) gradWire = GradWire.FP32;
        if (optimizer == null) throw new IllegalArgumentException("optimizer must be given (e.g. AdamW.gpt())");
        if (shardWithin == null) shardWithin = ShardScope.WORLD;
        if (gradReduce == null) gradReduce = GradReduce.FAST;
    }

    public static DataParallelOptions defaults() {
        return new DataParallelOptions(AUTO_BUCKET, 1L << 20, 0, true, AdamW.gpt(), GradWire.FP32, ShardScope.WORLD, GradReduce.FAST);
    }

    /** Refuses combinations that mean nothing, once the stage and the scope are both set. */
    public void validate() {
        if (shardWithin == ShardScope.HOST && zeroStage == 0)
            throw new IllegalArgumentException("sharding within a host (hybrid sharding) needs ZeRO stage 1, 2 or 3; DDP shards"
                    + " nothing (its all-reduce already goes host by host where that is cheaper)");
        if (gradReduce == GradReduce.ORDERED && (zeroStage != 0 || gradWire != GradWire.FP32))
            throw new IllegalArgumentException("--grad-reduce ordered needs DDP (--zero 0) with --grad-wire fp32: ZeRO sums the gradient"
                    + " norm over shards that move with the world size, and bf16 traffic rounds each rank's partial sum; got ZeRO stage "
                    + zeroStage + ", grad wire " + gradWire);
    }

    /** The bucket cap to use on {@code pg}: the configured one, or {@link BucketPlan#autoBucketBytes} of its links. */
    public long bucketBytesFor(ProcessGroup pg) {
        return bucketBytes != AUTO_BUCKET ? bucketBytes : BucketPlan.autoBucketBytes(pg.costModel());
    }

    public DataParallelOptions withZeroStage(int stage) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, stage, overlap, optimizer, gradWire, shardWithin, gradReduce);
    }

    public DataParallelOptions withBuckets(long first, long rest) {
        return new DataParallelOptions(rest, first, zeroStage, overlap, optimizer, gradWire, shardWithin, gradReduce);
    }

    public DataParallelOptions withOverlap(boolean on) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, on, optimizer, gradWire, shardWithin, gradReduce);
    }

    public DataParallelOptions withGradWire(GradWire wire) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, overlap, optimizer, wire, shardWithin, gradReduce);
    }

    public DataParallelOptions withOptimizer(Optimizer o) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, overlap, o, gradWire, shardWithin, gradReduce);
    }

    public DataParallelOptions withShardWithin(ShardScope scope) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, overlap, optimizer, gradWire, scope, gradReduce);
    }

    public DataParallelOptions withGradReduce(GradReduce r) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, overlap, optimizer, gradWire, shardWithin, r);
    }

    /** AdamW with nanoGPT's betas and epsilon and this weight decay (matrices only). */
    public DataParallelOptions withWeightDecay(float wd) {
        return withOptimizer(new AdamW(0.9f, 0.95f, 1e-8f, wd));
    }
}
