package dev.jtrain.autograd;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Bytes of activations currently held by graph nodes for backward, and the peak since the last reset.
 * This is how activation checkpointing's memory saving is measured (the CPU analogue of
 * torch.cuda.max_memory_allocated restricted to saved tensors).
 */
public final class SavedMemory {
    private static final AtomicLong LIVE = new AtomicLong();
    private static final AtomicLong PEAK = new AtomicLong();

    private SavedMemory() {}

    static void add(long bytes) {
        long now = LIVE.addAndGet(bytes);
        PEAK.accumulateAndGet(now, Math::max);
    }

    public static long liveBytes() {
        return LIVE.get();
    }

    public static long peakBytes() {
        return PEAK.get();
    }

    public static void resetPeak() {
        PEAK.set(LIVE.get());
    }
}
