package dev.jtrain.checkpoint;

import java.nio.file.Path;

/**
 * What one save did, on this rank.
 *
 * @param snapshotNanos       the copy into staging (on the writer thread for an overlapped snapshot)
 * @param stallNanos          time {@code save} blocked the caller: waiting for the previous save + planning + snapshot
 *                            (for a synchronous save also write and commit; for an overlapped snapshot not the copy,
 *                            whose remainder the caller may wait for in {@link Checkpointer#awaitSnapshot()})
 * @param planningNanos       planning alone (near zero on a plan-cache hit)
 * @param bytesWrittenPerRank tensor bytes each rank wrote (after de-duplication)
 * @param writeNanos          this rank's serialise + write + fsync + rename
 * @param writeCpuNanos       CPU time (user and system) that the overlapped snapshot, CRC32C, write, fsync and rename
 *                            took on this rank (-1 where the JVM cannot measure it): what an async save takes
 *                            from training when every core is busy. The snapshot copy counts only when overlapped.
 * @param totalNanos          from the call to the commit being durable
 */
public record SaveReport(long step, Path directory, boolean planCacheHit, long planningNanos, long snapshotNanos,
                         long stallNanos, long writeNanos, long writeCpuNanos, long totalNanos, long[] bytesWrittenPerRank) {
    public long bytesWrittenTotal() {
        long b = 0;
        for (long x : bytesWrittenPerRank) b += x;
        return b;
    }
}
