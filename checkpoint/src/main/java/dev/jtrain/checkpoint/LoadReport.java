package dev.jtrain.checkpoint;

import java.nio.file.Path;
import java.util.List;

/**
 * What one load did, on this rank.
 *
 * @param savedWorldSize  world size at save time (differs from the current one when resharding)
 * @param bytesRead       bytes this rank read from storage
 * @param bytesBroadcast  bytes this rank received from other ranks instead of reading them
 * @param broadcasts      broadcasts the load took part in (small shards travel in batches)
 * @param readNanos       reading, verifying and swapping into the live buffers (they overlap), and broadcasting
 * @param bytesReadDirect bytes read with direct I/O, past the page cache (data that was not cached, rounded out to
 *                        whole blocks); the rest of {@code bytesRead} came through the page cache
 * @param skipped         newer checkpoints passed over by {@link LoadOptions#fallback}, newest first, each with why
 */
public record LoadReport(long step, Path directory, int savedWorldSize, long bytesRead, long bytesBroadcast, int broadcasts,
                         long readNanos, long totalNanos, long bytesReadDirect, List<String> skipped) {
    public LoadReport {
        skipped = List.copyOf(skipped);
    }

    LoadReport withSkipped(List<String> s) {
        return new LoadReport(step, directory, savedWorldSize, bytesRead, bytesBroadcast, broadcasts, readNanos, totalNanos, bytesReadDirect, s);
    }
}
