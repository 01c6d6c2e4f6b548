package dev.jtrain.checkpoint;

import java.nio.file.Path;

/**
 * What one load did, on this rank.
 *
 * @param savedWorldSize  world size at save time (differs from the current one when resharding)
 * @param bytesRead       bytes this rank read from storage
 * @param bytesBroadcast  bytes this rank received from other ranks instead of reading them
 * @param readNanos       reading, verifying and swapping into the live buffers (they overlap), and broadcasting
 */
public record LoadReport(long step, Path directory, int savedWorldSize, long bytesRead, long bytesBroadcast,
                         long readNanos, long totalNanos) {}
