package dev.jtrain.checkpoint.storage.memory;

import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.comm.JTrainCommException;
import dev.jtrain.comm.store.AdoptionDirectory;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A shard streamed into the memory of its replica holders in {@link PeerMemoryStorage#CHUNK_BYTES} chunks, each
 * handed to every replica as soon as it is full. Writes must come in order (the shard-file writer writes the header,
 * then the data section front to back). Published by writing its size on every replica, last, so a reader never sees
 * a partial shard; a sink closed unpublished removes what it sent.
 *
 * <p>How a chunk reaches a holder: a holder on another host gets it through its socket; the holder of this host (its
 * launcher's, when that has a shared-memory directory) adopts a file written there, a freed chunk's file overwritten
 * when there is one ({@link AdoptionDirectory}). That is one copy into shared memory instead of a send and a receive
 * through the loopback device, both on the CPU that trains. When the only replica is this host's, the bytes go from
 * the caller's buffer straight into the file.
 */
final class MemoryShardSink implements ShardSink {
    private static final AtomicLong FILES = new AtomicLong();

    private final Path stepDir;
    private final String name;
    private final List<MemoryHolder> replicas;
    /** Chunks go straight into shared-memory files, no buffer: the one replica is this host's holder. */
    private final boolean straight;
    private final byte[] chunk;
    private FileChannel file; // straight: the chunk being written
    private String fileName;
    private int fill;
    private long written;
    private int chunksSent;
    private boolean published;

    MemoryShardSink(Path stepDir, String name, List<MemoryHolder> replicas) throws IOException {
        this.stepDir = stepDir;
        this.name = name;
        this.replicas = replicas;
        this.straight = replicas.size() == 1 && replicas.getFirst().sharedMemory() != null;
        this.chunk = straight ? null : new byte[PeerMemoryStorage.CHUNK_BYTES];
        // a failed attempt may have published this shard of an uncommitted step: it must not look published now
        onEvery(h -> h.delete(sizeKey()));
    }

    private String sizeKey() { return PeerMemoryStorage.key(stepDir, name + "#size"); }

    static String chunkKey(Path stepDir, String name, long i) { return PeerMemoryStorage.key(stepDir, name + "#" + i); }

    @Override
    public boolean direct() { return false; }

    @Override
    public void write(MemorySegment src, long position) throws IOException {
        if (position != written)
            throw new IOException("shard " + name + " of " + stepDir + ": memory sinks take writes in order; got position "
                    + position + " after " + written + " bytes");
        long off = 0, n = src.byteSize();
        while (off < n) {
            int take = (int) Math.min(n - off, PeerMemoryStorage.CHUNK_BYTES - fill);
            if (straight) writeFully(openChunkFile(), src.asSlice(off, take).asByteBuffer());
            else MemorySegment.copy(src, ValueLayout.JAVA_BYTE, off, chunk, fill, take);
            fill += take;
            off += take;
            if (fill == PeerMemoryStorage.CHUNK_BYTES) flush();
        }
        written += n;
    }

    private void flush() throws IOException {
        if (fill == 0) return;
        String key = chunkKey(stepDir, name, chunksSent);
        if (straight) {
            file.close();
            file = null;
            adopt(replicas.getFirst(), key, fileName, fill);
        } else {
            byte[] value = fill == chunk.length ? chunk : Arrays.copyOf(chunk, fill);
            for (MemoryHolder h : replicas) {
                if (h.sharedMemory() != null) {
                    String f = newFile();
                    try (FileChannel fc = claimChunkFile(h, f)) {
                        writeFully(fc, ByteBuffer.wrap(value));
                    }
                    adopt(h, key, f, value.length);
                } else {
                    onOne(h, x -> x.set(key, value));
                }
            }
        }
        chunksSent++;
        fill = 0;
    }

    private FileChannel openChunkFile() throws IOException {
        if (file == null) {
            fileName = newFile();
            file = claimChunkFile(replicas.getFirst(), fileName);
        }
        return file;
    }

    /** {@code h}'s chunk file {@code f}, to write from offset 0: a freed chunk's when there is one (overwriting its pages costs the copy alone). */
    private static FileChannel claimChunkFile(MemoryHolder h, String f) throws IOException {
        AdoptionDirectory.claim(h.sharedMemory(), PeerMemoryStorage.CHUNK_BYTES, f);
        return FileChannel.open(h.sharedMemory().resolve(f), StandardOpenOption.WRITE);
    }

    private static String newFile() { return "chunk-" + ProcessHandle.current().pid() + "-" + FILES.incrementAndGet(); }

    private static void writeFully(FileChannel fc, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) fc.write(b);
    }

    /** Hands the file to {@code h} (which keeps it, named, while it holds the value); removed if the holder refuses it. */
    private void adopt(MemoryHolder h, String key, String f, long length) throws IOException {
        try {
            onOne(h, x -> x.adopt(key, f, length));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(h.sharedMemory().resolve(f));
            throw e;
        }
    }

    @Override
    public void truncate(long length) throws IOException {
        if (length != written) throw new IOException("shard " + name + " of " + stepDir + ": memory sinks cannot truncate (" + length + " != " + written + ")");
    }

    @Override
    public long size() { return written; }

    @Override
    public void publish() throws IOException {
        flush();
        byte[] size = Long.toString(written).getBytes(StandardCharsets.US_ASCII);
        byte[] shardName = name.getBytes(StandardCharsets.UTF_8);
        onEvery(h -> {
            long k = h.add(PeerMemoryStorage.key(stepDir, "shards#n"), 1);
            h.set(PeerMemoryStorage.key(stepDir, "shards#" + k), shardName);
            h.set(sizeKey(), size);
        });
        published = true;
    }

    @Override
    public void close() {
        if (file != null) {
            try {
                file.close();
                Files.deleteIfExists(replicas.getFirst().sharedMemory().resolve(fileName));
            } catch (IOException ignored) {
                // the launcher removes its directory's leftovers
            }
            file = null;
        }
        if (published) return;
        for (MemoryHolder h : replicas) {
            if (h.lost()) continue;
            try {
                for (int i = 0; i < chunksSent; i++) h.delete(chunkKey(stepDir, name, i));
            } catch (JTrainCommException lost) {
                // gone anyway
            }
        }
    }

    /** Removes a published shard's chunks and size from {@code h}. */
    static void deleteShard(MemoryHolder h, Path stepDir, String name) {
        Optional<byte[]> size = h.find(PeerMemoryStorage.key(stepDir, name + "#size"));
        h.delete(PeerMemoryStorage.key(stepDir, name + "#size"));
        long bytes = size.map(b -> Long.parseLong(new String(b, StandardCharsets.US_ASCII))).orElse(0L);
        long chunks = (bytes + PeerMemoryStorage.CHUNK_BYTES - 1) / PeerMemoryStorage.CHUNK_BYTES;
        for (long i = 0; i < chunks; i++) h.delete(chunkKey(stepDir, name, i));
    }

    private interface HolderOp {
        void run(MemoryHolder h);
    }

    /** Runs {@code op} on every replica; a replica that fails fails the shard (every copy is the promise). */
    private void onEvery(HolderOp op) throws IOException {
        for (MemoryHolder h : replicas) onOne(h, op);
    }

    private void onOne(MemoryHolder h, HolderOp op) throws IOException {
        try {
            op.run(h);
        } catch (JTrainCommException e) {
            throw new IOException("shard " + name + " of " + stepDir + ": cannot write to the memory of " + h.describe()
                    + ": " + e.getMessage(), e);
        }
    }
}
