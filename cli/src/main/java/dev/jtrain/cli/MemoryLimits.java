package dev.jtrain.cli;

import dev.jtrain.parallel.MemoryPlan;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.Locale;

/**
 * What one rank may hold, from its JVM and its host, to check a {@link MemoryPlan} against before anything is
 * allocated.
 *
 * <p>Two limits, because a generational collector with a fixed split (ParallelGC, Serial) keeps what lives for the
 * whole run (weights, gradients, optimizer state, pooled buffers) in the old generation only: {@code lasting} is 97%
 * of that generation, and {@code total} 97% of the heap (the JVM's reported maximum already leaves out a survivor
 * space). Collectors without a fixed split (G1, ZGC) need headroom to work in: both limits are then 90% of the heap.
 * Either way no rank gets more than its share of the memory its host has available.
 *
 * @param total   bytes the rank's whole working set may take
 * @param lasting bytes that may stay allocated from step to step
 */
record MemoryLimits(long total, long lasting, String where) {
    private static final double GIB = 1L << 30;

    /** This JVM's limits, {@code ranksOnHost} ranks sharing {@code hostAvailable} bytes (≤ 0: unknown). */
    static MemoryLimits of(long heap, long oldGeneration, long hostAvailable, int ranksOnHost) {
        long share = hostAvailable > 0 ? hostAvailable / Math.max(1, ranksOnHost) : Long.MAX_VALUE;
        String host = hostAvailable > 0 ? String.format(Locale.ROOT, "; host %.2f GiB available / %d rank(s) on it",
                hostAvailable / GIB, ranksOnHost) : "";
        if (oldGeneration > 0 && oldGeneration < heap) {
            long total = (long) (0.97 * Math.min(heap, share));
            return new MemoryLimits(total, Math.min(total, (long) (0.97 * oldGeneration)), String.format(Locale.ROOT,
                    "97%% of heap %.2f GiB, of which the old generation, %.2f GiB, holds what stays from step to step "
                            + "(-XX:NewRatio sets its share)%s", heap / GIB, oldGeneration / GIB, host));
        }
        long total = (long) (0.9 * Math.min(heap, share));
        return new MemoryLimits(total, total, String.format(Locale.ROOT, "90%% of heap %.2f GiB%s", heap / GIB, host));
    }

    /** The limits of the running JVM. */
    static MemoryLimits ofThisJvm(int ranksOnHost) {
        return of(Runtime.getRuntime().maxMemory(), oldGenerationMaxBytes(), HostMemory.availableBytes(), ranksOnHost);
    }

    /** The whole working set within {@code total}; what stays between steps, and the model as built, within {@code lasting}. */
    boolean fits(MemoryPlan plan) {
        return plan.peak() <= total && Math.max(plan.longLived(), plan.build()) <= lasting;
    }

    String describe() {
        return String.format(Locale.ROOT, "%.2f GiB in all, %.2f GiB from step to step (%s)", total / GIB, lasting / GIB, where);
    }

    /** The old generation's maximum size in this JVM, or -1 if the collector has none or does not say. */
    private static long oldGenerationMaxBytes() {
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP && (p.getName().contains("Old Gen") || p.getName().contains("Tenured"))) {
                return p.getUsage().getMax();
            }
        }
        return -1;
    }
}
