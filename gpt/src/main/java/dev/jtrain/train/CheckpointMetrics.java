package dev.jtrain.train;

/**
 * One committed checkpoint, as this rank saw it; reported on the training thread once the commit is known (at once for
 * a synchronous save, at the first step boundary after it for an asynchronous one).
 *
 * @param step           steps done when it was taken (its directory is {@code step-NNNNNN})
 * @param blockedMs      time {@code save} blocked training (a synchronous save: all of it)
 * @param snapshotWaitMs time the next optimizer step waited for the overlapped snapshot copy (0 when it was done)
 * @param commitSeconds  from the call to the checkpoint being durable and committed on every rank
 * @param bytesWritten   tensor bytes this rank wrote
 * @param writeCpuMs     CPU time the copy, CRC32C and write took on this rank (what an async save takes from training
 *                       when every core is busy)
 */
public record CheckpointMetrics(int step, boolean async, double blockedMs, double snapshotWaitMs, double commitSeconds,
                                long bytesWritten, double writeCpuMs, double elapsedSeconds) {}
