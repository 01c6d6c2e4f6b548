package dev.jtrain.checkpoint.storage;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * One shard file being written: positioned writes from staging, then {@link #publish} makes it durable and visible
 * under its name in one step (until then a crash leaves no file of that name). What {@link CheckpointStorage}
 * hands out; the shard-file format (safetensors header, data section, CRCs) is the caller's.
 *
 * <p>Threading: one thread at a time.
 */
public interface ShardSink extends AutoCloseable {
    /** Alignment direct writes need of buffer address, file position and length (the largest logical block size). */
    long DIRECT_ALIGN = 4096;

    /** Whether writes bypass the page cache: then address, position and length must be multiples of {@link #DIRECT_ALIGN}. */
    boolean direct();

    /** Writes all of {@code src} at file position {@code position}. */
    void write(MemorySegment src, long position) throws IOException;

    /** Sets the file's length (cuts back the padding of a last direct block). */
    void truncate(long length) throws IOException;

    /** Bytes in the file so far. */
    long size() throws IOException;

    /** Makes the contents durable and renames the file into place; it is then visible under its name. */
    void publish() throws IOException;

    /** Releases the file; one that was not published is deleted. */
    @Override
    void close() throws IOException;

    /**
     * A file system that took direct I/O at open but refuses the writes (alignment beyond {@link #DIRECT_ALIGN}, for
     * one): the caller writes the shard again through a sink opened without direct I/O.
     */
    final class DirectRefused extends IOException {
        public DirectRefused(String message) {
            super(message);
        }
    }
}
