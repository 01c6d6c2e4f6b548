package dev.jtrain.checkpoint.storage.memory;

import dev.jtrain.checkpoint.storage.ShardSource;
import dev.jtrain.comm.JTrainCommException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/** A published shard read back from one holder's memory, chunk by chunk (the last chunk fetched is kept). */
final class MemoryShardSource implements ShardSource {
    private final MemoryHolder holder;
    private final Path stepDir;
    private final String name;
    private final long size;
    private long cachedIndex = -1;
    private byte[] cached;

    MemoryShardSource(MemoryHolder holder, Path stepDir, String name, long size) {
        this.holder = holder;
        this.stepDir = stepDir;
        this.name = name;
        this.size = size;
    }

    @Override
    public long size() { return size; }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        if (position >= size) return -1;
        int total = 0;
        while (dst.hasRemaining() && position < size) {
            long index = position / PeerMemoryStorage.CHUNK_BYTES;
            byte[] c = chunk(index);
            int at = (int) (position - index * PeerMemoryStorage.CHUNK_BYTES);
            int n = Math.min(dst.remaining(), c.length - at);
            if (n <= 0) throw new IOException("shard " + name + " of " + stepDir + " on " + holder.describe() + ": chunk " + index + " is short");
            dst.put(c, at, n);
            position += n;
            total += n;
        }
        return total;
    }

    private byte[] chunk(long index) throws IOException {
        if (index == cachedIndex) return cached;
        try {
            cached = holder.find(MemoryShardSink.chunkKey(stepDir, name, index)).orElseThrow(() -> new IOException(
                    "shard " + name + " of " + stepDir + ": chunk " + index + " is missing on " + holder.describe()));
        } catch (JTrainCommException e) {
            throw new IOException("shard " + name + " of " + stepDir + ": " + holder.describe() + " was lost while reading: " + e.getMessage(), e);
        }
        cachedIndex = index;
        return cached;
    }

    @Override
    public boolean directAvailable() { return false; }

    @Override
    public int readDirect(ByteBuffer dst, long position) throws IOException {
        throw new IOException("memory has no direct reads");
    }

    @Override
    public void refuseDirect() {}

    @Override
    public boolean cached(long position, long length) { return false; }

    @Override
    public void close() {
        cached = null;
    }
}
