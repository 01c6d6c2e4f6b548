package dev.jtrain.parallel;

import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.nn.FlatParameters;

import java.util.ArrayList;
import java.util.List;

/**
 * Groups parameters into gradient buckets in reverse registration order, the order backward produces their
 * gradients, so the first bucket fills first and its collective starts while backward is still running (PyTorch DDP's
 * Reducer; Li et al. 2020, "PyTorch Distributed"). The first bucket is small so communication starts early; the rest
 * are capped at {@code bucketBytes}. Each bucket is one contiguous range of the flat buffers, because consecutive
 * parameters are adjacent there.
 */
public final class BucketPlan {
    /** Bucket i covers flat range [lo, hi) and the slots [firstSlot, lastSlot] (slot indices ascending). */
    public record Bucket(int index, int lo, int hi, int firstSlot, int lastSlot) {
        public int length() {
            return hi - lo;
        }
    }

    private final List<Bucket> buckets;
    private final int[] bucketOfSlot;

    public BucketPlan(FlatParameters params, long firstBucketBytes, long bucketBytes) {
        if (bucketBytes < 4 || firstBucketBytes < 4)
            throw new IllegalArgumentException("bucket sizes must be positive: firstBucketBytes=" + firstBucketBytes + ", bucketBytes=" + bucketBytes);
        var slots = params.slots();
        bucketOfSlot = new int[slots.size()];
        buckets = new ArrayList<>();
        int end = slots.size() - 1;
        while (end >= 0) {
            long cap = buckets.isEmpty() ? firstBucketBytes : bucketBytes;
            int start = end;
            long bytes = (long) slots.get(end).numel() * Float.BYTES;
            while (start > 0 && bytes + (long) slots.get(start - 1).numel() * Float.BYTES <= cap) {
                start--;
                bytes += (long) slots.get(start).numel() * Float.BYTES;
            }
            int lo = slots.get(start).offset();
            int hi = slots.get(end).offset() + slots.get(end).numel();
            Bucket b = new Bucket(buckets.size(), lo, hi, start, end);
            for (int s = start; s <= end; s++) bucketOfSlot[s] = b.index();
            buckets.add(b);
            end = start - 1;
        }
    }

    /**
     * A bucket cap from the group's slowest link: the bytes whose all-reduce takes about {@link #TAIL_SECONDS}, within
     * [1 MiB, 25 MiB]. The last bucket's collective starts only when backward ends, so its time is exposed; the cap
     * bounds that tail. Smaller buckets pay α more often, but at 1 MiB even a TCP α of ~100 µs is a few percent. On
     * shared memory (β ≈ 0.2 ns/B) this gives PyTorch's 25 MiB; on a 2 Gbit/s link (β ≈ 4 ns/B), about 2.4 MB.
     */
    public static long autoBucketBytes(CostModel slowestLink) {
        if (slowestLink == null || slowestLink.betaSecondsPerByte() <= 0) return MAX_AUTO_BUCKET;
        double bytes = TAIL_SECONDS / slowestLink.betaSecondsPerByte();
        return (long) Math.max(MIN_AUTO_BUCKET, Math.min(MAX_AUTO_BUCKET, bytes));
    }

    static final double TAIL_SECONDS = 0.010;
    static final long MIN_AUTO_BUCKET = 1L << 20, MAX_AUTO_BUCKET = 25L << 20;

    public List<Bucket> buckets() {
        return buckets;
    }

    public int bucketOf(int slot) {
        return bucketOfSlot[slot];
    }
}
