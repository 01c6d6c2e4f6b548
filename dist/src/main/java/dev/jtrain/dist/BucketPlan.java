package dev.jtrain.dist;

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

    public List<Bucket> buckets() {
        return buckets;
    }

    public int bucketOf(int slot) {
        return bucketOfSlot[slot];
    }
}
