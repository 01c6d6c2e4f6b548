package dev.jtrain.checkpoint;

import java.nio.file.Path;

/**
 * What one save did, on this rank.
 *
 * @param stallNanos          time {@code save} blocked the caller: waiting for the previous save + planning + snapshot
 *                            (for a synchronous save also write and commit)
 * @param planningNanos       planning alone (near zero on a plan-cache hit)
 * @param bytesWrittenPerRank tensor bytes each rank wrote (after de-duplication)
 * @param writeNanos          this rank's serialise + write + fsync + rename
 * @param totalNanos          from the call to the commit being durable
 */
public record SaveReport(long step, Path directory, boolean planCacheHit, long planningNanos, long snapshotNanos,
                         long stallNanos, long writeNanos, long totalNanos, long[] bytesWrittenPerRank) {
    public long bytesWrittenTotal() {
        long b = 0;
        for (long x : bytesWrittenPerRank) b += x;
        return b;
    }
}
