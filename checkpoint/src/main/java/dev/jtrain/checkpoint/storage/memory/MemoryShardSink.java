package dev.jtrain.checkpoint.storage.memory;

import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.comm.JTrainCommException;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * A shard streamed into the memory of its replica holders in {@link PeerMemoryStorage#CHUNK_BYTES} chunks, each sent
 * to every replica as soon as it is full. Writes must come in order (the shard-file writer writes the header, then
 * the data section front to back). Published by writing its size on every replica, last, so a reader never sees a
 * partial shard; a sink closed unpublished removes what it sent.
 */
final class MemoryShardSink implements ShardSink {
    private final Path stepDir;
    private final String name;
    private final List<MemoryHolder> replicas;
    private final byte[] chunk = new byte[PeerMemoryStorage.CHUNK_BYTES];
    private int fill;
    private long written;
    private int chunksSent;
    private boolean published;

    MemoryShardSink(Path stepDir, String name, List<MemoryHolder> replicas) throws IOException {
        this.stepDir = stepDir;
        this.name = name;
        this.replicas = replicas;
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
            int take = (int) Math.min(n - off, chunk.length - fill);
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, off, chunk, fill, take);
            fill += take;
            off += take;
            if (fill == chunk.length) flush();
        }
        written += n;
    }

    private void flush() throws IOException {
        if (fill == 0) return;
        byte[] value = fill == chunk.length ? chunk : Arrays.copyOf(chunk, fill);
        String key = chunkKey(stepDir, name, chunksSent);
        onEvery(h -> h.set(key, value));
        chunksSent++;
        fill = 0;
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

    /** Runs {@code op} on every replica; a replica that fails fails the shard (both copies are the promise). */
    private void onEvery(HolderOp op) throws IOException {
        for (MemoryHolder h : replicas) {
            try {
                op.run(h);
            } catch (JTrainCommException e) {
                throw new IOException("shard " + name + " of " + stepDir + ": cannot write to the memory of " + h.describe()
                        + ": " + e.getMessage(), e);
            }
        }
    }
}
