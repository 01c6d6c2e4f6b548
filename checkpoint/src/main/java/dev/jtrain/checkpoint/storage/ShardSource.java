package dev.jtrain.checkpoint.storage;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One shard file being read on load: positioned reads, through a cache or past it. The loader reads what is cached
 * through the cache and the rest past it (direct I/O on files), because buffered reads of cold data cost the training
 * cores the cache's copies and its reclaim.
 *
 * <p>Threading: one thread at a time.
 */
public interface ShardSource extends AutoCloseable {
    /** Bytes in the shard. */
    long size() throws IOException;

    /** Reads into {@code dst} from {@code position} through the cache; returns bytes read, -1 at the end. */
    int read(ByteBuffer dst, long position) throws IOException;

    /**
     * Whether reads past the cache are available now ({@link #readDirect}): not on a file system that refuses them,
     * nor after {@link #refuseDirect}.
     */
    boolean directAvailable();

    /**
     * Reads past the cache: {@code dst}'s address, {@code position} and the length must be multiples of
     * {@link ShardSink#DIRECT_ALIGN}. Throws if the storage refuses after all (then call {@link #refuseDirect}).
     */
    int readDirect(ByteBuffer dst, long position) throws IOException;

    /** Stops offering direct reads (the storage refused one); later reads go through the cache. */
    void refuseDirect();

    /**
     * Whether at least half of [position, position + length) is in the cache now, so that reading it through the cache
     * (which fetches the rest) beats reading all of it from the storage; false when that can not be told.
     */
    boolean cached(long position, long length);

    @Override
    void close();
}
