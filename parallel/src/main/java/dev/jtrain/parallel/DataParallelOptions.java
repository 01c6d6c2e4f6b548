package dev.jtrain.parallel;

import dev.jtrain.comm.ProcessGroup;

/**
 * @param bucketBytes      cap of every bucket after the first, or {@link #AUTO_BUCKET} to size it from the group's
 *                         slowest link ({@link BucketPlan#autoBucketBytes}); PyTorch's fixed default is 25 MiB
 * @param firstBucketBytes cap of the first bucket, small so that communication starts early (PyTorch: 1 MiB)
 * @param zeroStage        0 = DDP (replicated optimizer), 1 = sharded optimizer state, 2 = also sharded gradients
 * @param overlap          launch collectives from backward hooks (true) or only after backward (false, for comparison)
 * @param gradWire         the element type gradients travel in: {@link GradWire#FP32}, or {@link GradWire#BF16} for
 *                         half the bytes on networks slower than the model needs (PyTorch's {@code bf16_compress_hook})
 */
public record DataParallelOptions(long bucketBytes, long firstBucketBytes, int zeroStage, boolean overlap,
                                  float beta1, float beta2, float eps, float weightDecay, GradWire gradWire) {
    /** {@code bucketBytes} to be chosen from the process group's measured link speed. */
    public static final long AUTO_BUCKET = 0;

    public DataParallelOptions {
        if (zeroStage < 0 || zeroStage > 2) throw new IllegalArgumentException("zeroStage must be 0, 1 or 2: " + zeroStage);
        if ((bucketBytes < 64 && bucketBytes != AUTO_BUCKET) || firstBucketBytes < 64)
            throw new IllegalArgumentException("bucket sizes must be >= 64 bytes: bucketBytes=" + bucketBytes + ", firstBucketBytes=" + firstBucketBytes);
        if (gradWire == null) gradWire = GradWire.FP32;
    }

    public static DataParallelOptions defaults() {
        return new DataParallelOptions(AUTO_BUCKET, 1L << 20, 0, true, 0.9f, 0.95f, 1e-8f, 0.1f, GradWire.FP32);
    }

    /** The bucket cap to use on {@code pg}: the configured one, or {@link BucketPlan#autoBucketBytes} of its links. */
    public long bucketBytesFor(ProcessGroup pg) {
        return bucketBytes != AUTO_BUCKET ? bucketBytes : BucketPlan.autoBucketBytes(pg.costModel());
    }

    public DataParallelOptions withZeroStage(int stage) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, stage, overlap, beta1, beta2, eps, weightDecay, gradWire);
    }

    public DataParallelOptions withBuckets(long first, long rest) {
        return new DataParallelOptions(rest, first, zeroStage, overlap, beta1, beta2, eps, weightDecay, gradWire);
    }

    public DataParallelOptions withOverlap(boolean on) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, on, beta1, beta2, eps, weightDecay, gradWire);
    }

    public DataParallelOptions withGradWire(GradWire wire) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, overlap, beta1, beta2, eps, weightDecay, wire);
    }

    public DataParallelOptions withWeightDecay(float wd) {
        return new DataParallelOptions(bucketBytes, firstBucketBytes, zeroStage, overlap, beta1, beta2, eps, wd, gradWire);
    }
}
