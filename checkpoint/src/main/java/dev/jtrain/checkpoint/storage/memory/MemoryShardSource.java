package dev.jtrain.checkpoint.storage.memory;

import dev.jtrain.checkpoint.storage.ShardSource;
import dev.jtrain.comm.JTrainCommException;
import dev.jtrain.comm.store.AdoptionDirectory;
import dev.jtrain.comm.store.TcpStore;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A published shard read back from one holder's memory, chunk by chunk (the last chunk fetched is kept). When the
 * holder runs on this host and a chunk is a file it adopted from shared memory, the chunk is mapped and read in
 * place: the launcher sends nothing and the rank receives nothing through a socket. On the host that serves a
 * restarted node its copy, the local ranks' own reads otherwise doubled what its launcher sent, on a CPU those ranks
 * share (bench/MEASUREMENTS.md, "Where a restarted rank's time goes"). A file freed and reused by a later save while
 * it is read changes under the mapping; the piece's CRC32C then fails the load like any corrupt piece.
 */
final class MemoryShardSource implements ShardSource {
    private final MemoryHolder holder;
    private final Path stepDir;
    private final String name;
    private final long size;
    private long cachedIndex = -1;
    private MemorySegment cached;
    private final AtomicLong bytesMapped;
    private Arena mapping; // open while the cached chunk is a mapped file

    /** @param bytesMapped counts the bytes of chunks mapped instead of fetched */
    MemoryShardSource(MemoryHolder holder, Path stepDir, String name, long size, AtomicLong bytesMapped) {
        this.holder = holder;
        this.stepDir = stepDir;
        this.name = name;
        this.size = size;
        this.bytesMapped = bytesMapped;
    }

    @Override
    public long size() { return size; }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        if (position >= size) return -1;
        int total = 0;
        while (dst.hasRemaining() && position < size) {
            long index = position / PeerMemoryStorage.CHUNK_BYTES;
            MemorySegment c = chunk(index);
            long at = position - index * PeerMemoryStorage.CHUNK_BYTES;
            int n = (int) Math.min(dst.remaining(), c.byteSize() - at);
            if (n <= 0) throw new IOException("shard " + name + " of " + stepDir + " on " + holder.describe() + ": chunk " + index + " is short");
            MemorySegment.copy(c, at, MemorySegment.ofBuffer(dst), 0, n);
            dst.position(dst.position() + n);
            position += n;
            total += n;
        }
        return total;
    }

    private MemorySegment chunk(long index) throws IOException {
        if (index == cachedIndex) return cached;
        unmap();
        cachedIndex = -1;
        String key = MemoryShardSink.chunkKey(stepDir, name, index);
        try {
            Optional<TcpStore.Located> file = holder.locate(key);
            MemorySegment mapped = file.isPresent() ? map(file.get()) : null;
            cached = mapped != null ? mapped : MemorySegment.ofArray(holder.find(key).orElseThrow(() -> new IOException(
                    "shard " + name + " of " + stepDir + ": chunk " + index + " is missing on " + holder.describe())));
        } catch (JTrainCommException e) {
            throw new IOException("shard " + name + " of " + stepDir + ": " + holder.describe() + " was lost while reading: " + e.getMessage(), e);
        }
        cachedIndex = index;
        return cached;
    }

    /** The chunk's file mapped read-only, or null to fetch it through the socket instead (the file is gone or short). */
    private MemorySegment map(TcpStore.Located at) {
        String f = at.file();
        if (!AdoptionDirectory.isPlainName(f)) return null;
        Arena arena = Arena.ofShared();
        try (FileChannel fc = FileChannel.open(holder.sharedMemory().resolve(f), StandardOpenOption.READ)) {
            if (fc.size() < at.length()) {
                arena.close();
                return null;
            }
            MemorySegment m = fc.map(FileChannel.MapMode.READ_ONLY, 0, at.length(), arena);
            mapping = arena;
            bytesMapped.addAndGet(at.length());
            return m;
        } catch (IOException | RuntimeException e) { // freed and renamed since the holder answered: ask for the bytes
            arena.close();
            return null;
        }
    }

    private void unmap() {
        cached = null;
        if (mapping != null) {
            mapping.close();
            mapping = null;
        }
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
        unmap();
        cachedIndex = -1;
    }
}
