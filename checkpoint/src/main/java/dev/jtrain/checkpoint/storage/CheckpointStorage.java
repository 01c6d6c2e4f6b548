package dev.jtrain.checkpoint.storage;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * Where a checkpoint's bytes go, and how a step becomes the committed one: the seam between the checkpoint's planning
 * (what each rank writes, de-duplicated and balanced) and a storage tier. {@link dev.jtrain.checkpoint.storage.posix.PosixStorage}
 * writes files on a local or shared POSIX file system; a tier in peers' memory implements the same calls.
 *
 * <p>Protocol of one save: every rank {@link #createShard creates}, writes and publishes its shard; the coordinator
 * then calls {@link #syncStep} (every publish is durable), {@link #commit} (the metadata appears whole or not at
 * all, and the step becomes the latest), and {@link #retain}. A crash at any point leaves the last committed step as
 * it was. On load, each rank {@link #resolve resolves} the step, {@link #readMetadata reads} its metadata and
 * {@link #openShard opens} the shards it reads.
 *
 * <p>Steps are named by paths ({@link #stepDir}) so that every tier keys a step the same way; a tier that is not a
 * file system uses them as names only.
 *
 * <p>Threading: implementations are safe for concurrent calls on different shards.
 */
public interface CheckpointStorage {
    /** Where checkpoint {@code step} under {@code root} lives. */
    Path stepDir(Path root, long step);

    /** The step {@code stepDir} stands for, if it is a step's name. */
    OptionalLong stepOf(Path stepDir);

    /** Whether {@code stepDir} holds a committed checkpoint where this process's saves go (a save refuses to overwrite one). */
    boolean isCommitted(Path stepDir) throws IOException;

    /**
     * The committed checkpoint to load: {@code root} itself if it is a step, else step {@code step} if ≥ 0, else the
     * one the latest pointer names, else the newest committed one.
     *
     * @throws java.nio.file.NoSuchFileException if there is none
     */
    Path resolve(Path root, long step) throws IOException;

    /** The committed steps under {@code root}, oldest first. */
    List<Path> committedSteps(Path root) throws IOException;

    /**
     * The metadata a {@link #commit} wrote for {@code stepDir}.
     *
     * @throws java.nio.file.NoSuchFileException if the step is not committed
     */
    byte[] readMetadata(Path stepDir) throws IOException;

    /** A new shard file {@code name} in {@code stepDir} (created if needed); with {@code direct}, past the page cache where possible. */
    ShardSink createShard(Path stepDir, String name, boolean direct) throws IOException;

    /**
     * Opens shard {@code name} of {@code stepDir} for reading (its header included); with {@code direct}, reads past
     * the cache are offered where the storage can.
     */
    ShardSource openShard(Path stepDir, String name, boolean direct) throws IOException;

    /** Makes every shard published into {@code stepDir} durable (called once by the coordinator, before {@link #commit}). */
    void syncStep(Path stepDir) throws IOException;

    /**
     * Commits the step: stores {@code metadata} for {@code stepDir} atomically and durably, then points {@code root}'s
     * latest pointer at the step.
     */
    void commit(Path root, Path stepDir, byte[] metadata) throws IOException;

    /**
     * Moves committed step {@code stepDir}, found unusable, out of the way without deleting it: it is no longer listed,
     * loaded or retained, and its step can be saved again. If the latest pointer named it, it now names
     * {@code replacement} (none when null). Returns where the step went. Called by the coordinator only.
     */
    Path setAside(Path root, Path stepDir, Path replacement) throws IOException;

    /** Keeps the newest {@code keepLast} committed steps up to {@code newest} (never {@code newest}); returns what it deleted. */
    List<Path> retain(Path root, int keepLast, Path newest) throws IOException;

    /** Links whatever the first save would otherwise pay for (native calls, method handles); may do nothing. */
    default void warmUp() {}
}
