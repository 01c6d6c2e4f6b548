package dev.jtrain.train;

/**
 * One committed checkpoint, as this rank saw it; reported on the training thread once the commit is known (at once for
 * a synchronous save, at the first step boundary after it for an asynchronous one).
 *
 * @param step           steps done when it was taken (its directory is {@code step-NNNNNN})
 * @param blockedMs      time the save call blocked training, including waiting for the previous save if it was still
 *                       writing (a synchronous save: all of it)
 * @param snapshotWaitMs time the next optimizer step waited for the overlapped snapshot copy (0 when it was done)
 * @param commitSeconds  from the call to the checkpoint being durable and committed on every rank
 * @param bytesWritten   tensor bytes this rank wrote
 * @param writeCpuMs     CPU time of the save's background threads on this rank: the writer, and the copier of an
 *                       overlapped snapshot (copy, CRC32C, write; for an async save: what it takes from training when
 *                       every core is busy); -1 where the JVM cannot measure it
 * @param elapsedSeconds since the run started, when the commit was reported
 * @param tier           the storage tier it went to ("disk", "memory")
 */
public record CheckpointMetrics(int step, boolean async, double blockedMs, double snapshotWaitMs, double commitSeconds,
                                long bytesWritten, double writeCpuMs, double elapsedSeconds, String tier) {}
