package dev.jtrain.checkpoint;

import java.nio.file.Path;

/**
 * What one save did, on this rank.
 *
 * @param snapshotNanos       the copy into staging (on the caller, or a background copier for an overlapped snapshot),
 *                            with CRC32C except for an async save copied on the caller; the write runs behind it
 * @param stallNanos          time {@code save} blocked the caller: waiting for the previous save + planning + snapshot
 *                            (for a synchronous save also write and commit; for an overlapped snapshot not the copy,
 *                            whose remainder the caller may wait for in {@link Checkpointer#awaitSnapshot()})
 * @param planningNanos       planning alone (near zero on a plan-cache hit)
 * @param bytesWrittenPerRank tensor bytes each rank wrote (after de-duplication)
 * @param writeNanos          this rank's write + fsync + rename, from its start right after planning (so it
 *                            includes waiting for the copy it follows)
 * @param writeCpuNanos       CPU time (user and system) of the save's background threads on this rank: the writer
 *                            (write, fsync, rename; CRC32C when the training thread made the copy of an async
 *                            save) and an overlapped snapshot's copier (copy and CRC32C); -1 where the JVM cannot
 *                            measure it. What an async save takes from training when every core is busy.
 * @param totalNanos          from the call to the commit being durable
 */
public record SaveReport(long step, Path directory, boolean planCacheHit, long planningNanos, long snapshotNanos,
                         long stallNanos, long writeNanos, long writeCpuNanos, long totalNanos, long[] bytesWrittenPerRank,
                         String note) {
    public long bytesWrittenTotal() {
        long b = 0;
        for (long x : bytesWrittenPerRank) b += x;
        return b;
    }
}
