package dev.jtrain.parallel;

import java.util.function.Consumer;

/**
 * Per step, which gradient buckets are complete, and their collectives launched strictly in bucket order. Backward
 * reaches parameters in an order that may differ between ranks (and post-accumulate-grad hooks fire as it goes),
 * but every rank must issue the same collectives in the same order, so a ready bucket waits for all lower-numbered
 * ones (PyTorch DDP's reducer does the same). Shared by {@link DistributedDataParallel} and {@link ZeroOptimizer},
 * which differ only in what launching a bucket means.
 *
 * <p>Threading: the training thread only (hooks run on it during backward).
 */
final class BucketLaunches {
    private final BucketPlan plan;
    private final Consumer<BucketPlan.Bucket> launch;
    private final int[] pending;
    private final boolean[] ready;
    private int next;

    /** @param launch starts the collective of one bucket; called in bucket order, once per bucket per step */
    BucketLaunches(BucketPlan plan, Consumer<BucketPlan.Bucket> launch) {
        this.plan = plan;
        this.launch = launch;
        this.pending = new int[plan.buckets().size()];
        this.ready = new boolean[pending.length];
        reset();
    }

    /** Back to "no gradient yet" for the next step. */
    void reset() {
        for (BucketPlan.Bucket b : plan.buckets()) {
            pending[b.index()] = b.lastSlot() - b.firstSlot() + 1;
            ready[b.index()] = false;
        }
        next = 0;
    }

    /** Slot {@code slot}'s gradient is final; when that completes its bucket, launches what is ready if {@code now}. */
    void gradientReady(int slot, boolean now) {
        int b = plan.bucketOf(slot);
        if (--pending[b] == 0) {
            ready[b] = true;
            if (now) launchReady();
        }
    }

    /**
     * End of backward: buckets whose hooks did not all fire (parameters that got no gradient) become ready, and
     * everything not launched yet goes, in order (launching a bucket stages what its hooks did not).
     */
    void launchRest() {
        for (BucketPlan.Bucket b : plan.buckets()) ready[b.index()] = true;
        launchReady();
    }

    private void launchReady() {
        var bs = plan.buckets();
        while (next < bs.size() && ready[next]) launch.accept(bs.get(next++));
    }
}
