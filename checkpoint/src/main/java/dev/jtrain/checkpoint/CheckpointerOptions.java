package dev.jtrain.checkpoint;

import java.util.Properties;

/**
 * How a {@link Checkpointer} touches memory and disk, resolved once.
 *
 * @param directIo     shard files are written, and read where not cached, past the page cache (O_DIRECT): a
 *                     buffered write of a large checkpoint costs the training cores the page-cache copy and its
 *                     reclaim (bench/MEASUREMENTS.md, "direct I/O"). Falls back per file where the file system
 *                     refuses it.
 * @param hugePages    staging buffers of 2 MiB and more are mapped with transparent huge pages advised (fewer TLB
 *                     misses while the snapshot copies)
 * @param nativeWriter shard files are written with pwrite + sync_file_range through libc (write-back starts behind
 *                     the snapshot instead of all at the final fsync); off: plain FileChannel writes
 * @param loadLeadBytes how far the load's reader may run ahead of the checksumming thread before landed ranges are
 *                     deferred to a copy after the agreement instead of swapped in as they land; 0 = two read
 *                     chunks. {@code Long.MAX_VALUE} always swaps, -1 always defers (tests pin either path).
 * @param broadcastBatchBytes a broadcast load sends shards smaller than this in batches of up to this many bytes
 *                     (see {@code LoadPlanner.readPlan}); 0 = one broadcast per shard. Every rank of a load must use
 *                     the same value: it decides which broadcasts the ranks issue
 */
public record CheckpointerOptions(boolean directIo, boolean hugePages, boolean nativeWriter, long loadLeadBytes,
                                  long broadcastBatchBytes) {
    /** Default {@link #broadcastBatchBytes}: a few milliseconds of a slow inter-host link, far above its latency. */
    public static final long BROADCAST_BATCH_BYTES = 4L << 20;

    public CheckpointerOptions {
        if (broadcastBatchBytes < 0) throw new IllegalArgumentException("broadcastBatchBytes must be >= 0: " + broadcastBatchBytes);
    }

    public CheckpointerOptions(boolean directIo, boolean hugePages, boolean nativeWriter) {
        this(directIo, hugePages, nativeWriter, 0);
    }

    public CheckpointerOptions(boolean directIo, boolean hugePages, boolean nativeWriter, long loadLeadBytes) {
        this(directIo, hugePages, nativeWriter, loadLeadBytes, BROADCAST_BATCH_BYTES);
    }

    public static CheckpointerOptions defaults() { return new CheckpointerOptions(true, true, true); }

    public CheckpointerOptions withLoadLeadBytes(long bytes) {
        return new CheckpointerOptions(directIo, hugePages, nativeWriter, bytes, broadcastBatchBytes);
    }

    public CheckpointerOptions withBroadcastBatchBytes(long bytes) {
        return new CheckpointerOptions(directIo, hugePages, nativeWriter, loadLeadBytes, bytes);
    }

    /**
     * Defaults, with {@code -Djtrain.checkpoint.directIo=false}, {@code .hugePages=false} or
     * {@code .syncFileRange=false} (e.g. in {@code JTRAIN_JAVA_OPTS}) turning a feature off.
     */
    public static CheckpointerOptions fromSystemProperties() { return from(System.getProperties()); }

    static CheckpointerOptions from(Properties p) {
        return new CheckpointerOptions(on(p, "jtrain.checkpoint.directIo"), on(p, "jtrain.checkpoint.hugePages"),
                on(p, "jtrain.checkpoint.syncFileRange"));
    }

    private static boolean on(Properties p, String key) {
        String v = p.getProperty(key);
        if (v == null || v.isBlank() || v.equalsIgnoreCase("true")) return true;
        if (v.equalsIgnoreCase("false")) return false;
        throw new IllegalArgumentException(key + " must be true or false: " + v);
    }
}
