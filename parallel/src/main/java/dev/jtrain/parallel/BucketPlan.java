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
 *
 * <p>The last buckets taper: the final one holds at most {@code max(firstBucketBytes, bucketBytes / 16)}, each one
 * before it twice the one after, up to half of {@code bucketBytes}. A bucket's collective starts when its last
 * gradient is final, and the gradients of the first parameters (the embeddings, tied to the output layer, and the
 * first block) are final only as backward ends, so whatever shares a bucket with them waits for the end too, and
 * its whole collective is exposed: PyTorch's greedy plan leaves there whatever the 25 MiB buckets did not take (17 MB
 * of the 43 MB of the {@code small} preset). Tapered, the buckets just before the end go out as their blocks finish,
 * and the one exposed collective is small.
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
        // the taper, as slot ranges from slot 0 (the last gradients) up, caps doubling
        List<int[]> taper = new ArrayList<>();
        int from = 0;
        for (long cap = Math.max(firstBucketBytes, bucketBytes / TAPER_DIVISOR); cap <= bucketBytes / 2 && from < slots.size(); cap *= 2) {
            int to = from;
            long bytes = bytes(slots, to);
            while (to + 1 < slots.size() && bytes + bytes(slots, to + 1) <= cap) bytes += bytes(slots, ++to);
            taper.add(new int[]{from, to});
            from = to + 1;
        }
        // the rest greedily from the last slot (the first gradients) down, as PyTorch's Reducer
        int end = slots.size() - 1;
        while (end >= from) {
            long cap = buckets.isEmpty() ? firstBucketBytes : bucketBytes;
            int start = end;
            long bytes = bytes(slots, end);
            while (start > from && bytes + bytes(slots, start - 1) <= cap) bytes += bytes(slots, --start);
            add(slots, start, end);
            end = start - 1;
        }
        for (int i = taper.size() - 1; i >= 0; i--) add(slots, taper.get(i)[0], taper.get(i)[1]);
    }

    /** Buckets are made in launch order: this one covers slots [start, end]. */
    private void add(List<FlatParameters.Slot> slots, int start, int end) {
        int lo = slots.get(start).offset();
        int hi = slots.get(end).offset() + slots.get(end).numel();
        Bucket b = new Bucket(buckets.size(), lo, hi, start, end);
        for (int s = start; s <= end; s++) bucketOfSlot[s] = b.index();
        buckets.add(b);
    }

    private static long bytes(List<FlatParameters.Slot> slots, int slot) {
        return (long) slots.get(slot).numel() * Float.BYTES;
    }

    /** The last bucket holds at most 1/16 of the cap (or the first bucket's size): 1.6 MiB of PyTorch's 25. */
    static final int TAPER_DIVISOR = 16;

    /**
     * A bucket cap from the group's slowest link: the bytes whose all-reduce takes about {@link #TAIL_SECONDS}, within
     * [1 MiB, 25 MiB]. The buckets whose collectives start as backward ends are exposed; the cap (and the
     * taper below it) bounds that tail. Smaller buckets pay α more often, but at 1 MiB even a TCP α of ~100 µs is a
     * few percent. On shared memory (β ≈ 0.2 ns/B) this gives PyTorch's 25 MiB; on a 2 Gbit/s link (β ≈ 4 ns/B), about 2.4 MB.
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
