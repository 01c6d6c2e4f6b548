package dev.jtrain.checkpoint.storage;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Where a checkpoint's bytes go, and how a step becomes the committed one: the seam between the checkpoint's planning
 * (what each rank writes, de-duplicated and balanced) and a storage tier. {@link dev.jtrain.checkpoint.storage.posix.PosixStorage}
 * writes files on a local or shared POSIX file system; a tier in peers' memory implements the same calls.
 *
 * <p>Protocol of one save: every rank {@link #createShard creates}, writes and publishes its shard; the coordinator
 * then calls {@link #syncStep} (every publish is durable), {@link #commit} (the metadata appears whole or not at
 * all, and the step becomes the latest), and {@link #retain}. A crash at any point leaves the last committed step as
 * it was. Reading still goes to files directly (the loader's read-ahead and direct reads); it moves behind this
 * interface next.
 *
 * <p>Threading: implementations are safe for concurrent calls on different shards.
 */
public interface CheckpointStorage {
    /** A new shard file {@code name} in {@code stepDir} (created if needed); with {@code direct}, past the page cache where possible. */
    ShardSink createShard(Path stepDir, String name, boolean direct) throws IOException;

    /** Makes every shard published into {@code stepDir} durable (called once by the coordinator, before {@link #commit}). */
    void syncStep(Path stepDir) throws IOException;

    /**
     * Commits the step: writes {@code metadata} as {@code stepDir/metadataName} atomically and durably, then points
     * {@code root}'s latest pointer at the step.
     */
    void commit(Path root, Path stepDir, String metadataName, byte[] metadata) throws IOException;

    /** Keeps the newest {@code keepLast} committed steps up to {@code newest} (never {@code newest}); returns what it deleted. */
    List<Path> retain(Path root, int keepLast, Path newest) throws IOException;

    /** Links whatever the first save would otherwise pay for (native calls, method handles); may do nothing. */
    default void warmUp() {}
}
