package dev.jtrain.checkpoint;

import dev.jtrain.tensor.io.SafetensorsException;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.io.TensorInfo;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * Reads the saved pieces of one load into staging on a background thread, in a fixed order, while the loading thread
 * consumes them as they land: CRC32C chunk by chunk, and whatever the loader does with landed bytes (it swaps them into
 * the live buffers). Disk reads and the CPU work of checking and placing the bytes thus overlap, instead of alternating
 * on one thread — the double-buffering every streaming loader does, here with the whole load's staging as the buffer.
 *
 * <p>Each piece is checked before its bytes are read: the shard file's safetensors header (parsed once per file, which
 * also checks the file is whole) and the piece's dtype and length against the metadata. Failures are
 * {@link CheckpointException}s naming the file, the tensor and the item, thrown by {@link #consume} of that piece on
 * the loading thread; the background thread moves on to the next piece unless the loader {@link #cancel}s it.
 *
 * <p>Threading: {@link #start} once, then {@link #consume} from the loading thread only; {@link #close} stops and joins
 * the background thread before the staging memory it writes may be reused.
 */
final class PieceReader implements AutoCloseable {
    /** Reads are issued in chunks of the kernel's sequential readahead window (read_ahead_kb = 8192 here). */
    private static final long READ_CHUNK = 8L << 20;
    /** The consumer checksums and places this much at a time, so the second pass finds it in cache. */
    private static final long CONSUME_STEP = 2L << 20;

    /**
     * Receives landed, not yet verified bytes [from, to) of a piece (offsets relative to the piece); {@code behind}
     * says the reader is more than {@link #LEAD_BYTES} ahead of the consumer, so the consumer, not the disk, is what
     * the load waits for (the data came from the page cache, say) and extra work now would lengthen the load.
     */
    interface Landed {
        void accept(long from, long to, boolean behind);
    }

    /** A reader this far ahead of the consumer has been waiting for it, not for the disk: two read chunks. */
    static final long LEAD_BYTES = 2 * READ_CHUNK;
    /** Overrides {@link #LEAD_BYTES} (tests force swapping with a huge value, deferring with -1). */
    static final String LEAD_PROPERTY = "jtrain.checkpoint.load.leadBytes";

    private record OpenFile(Path path, SafetensorsReader header, FileChannel channel) { }

    private final Path dir;
    private final long leadBytes = Long.getLong(LEAD_PROPERTY, LEAD_BYTES);
    private final List<LoadPlanner.ShardPlan> plans;
    private final int rank;
    private final Map<String, OpenFile> files = new HashMap<>();   // background thread only, until close
    private final Set<CheckpointMetadata.Piece> consumed = new HashSet<>();
    private final Map<CheckpointMetadata.Piece, Integer> indexOf = new HashMap<>();
    private List<CheckpointMetadata.Piece> order = List.of();
    private Map<CheckpointMetadata.Piece, Long> pieceAt = Map.of();
    private MemorySegment stage;
    private Thread thread;
    private long bytesRead;

    // Progress, guarded by this: bytes landed per piece, each piece's failure, pieces finished (landed or failed).
    private long[] landed = new long[0];
    private CheckpointException[] failed = new CheckpointException[0];
    private int finished;
    private boolean cancelled, stopped;
    private long landedTotal; // bytes landed over all pieces, in read order
    private boolean interruptedWhileWaiting; // loading thread only

    /** @param plans the load's plan, to name items in errors */
    PieceReader(Path dir, List<LoadPlanner.ShardPlan> plans, int rank) {
        this.dir = dir;
        this.plans = plans;
        this.rank = rank;
    }

    /** Starts reading {@code pieces} (each once, in this order) into {@code stage} at their {@code pieceAt} offsets. */
    void start(List<CheckpointMetadata.Piece> pieces, Map<CheckpointMetadata.Piece, Long> pieceAt, MemorySegment stage) {
        if (thread != null) throw new IllegalStateException("PieceReader started twice");
        List<CheckpointMetadata.Piece> unique = new ArrayList<>();
        for (CheckpointMetadata.Piece p : pieces)
            if (indexOf.putIfAbsent(p, unique.size()) == null) unique.add(p);
        this.order = unique;
        this.pieceAt = pieceAt;
        this.stage = stage;
        this.landed = new long[unique.size()];
        this.failed = new CheckpointException[unique.size()];
        thread = Thread.ofPlatform().daemon().name("jtrain-ckpt-read-rank-" + rank).start(this::readAll);
    }

    /** Bytes read and verified so far by {@link #consume}. */
    long bytesRead() { return bytesRead; }

    /**
     * Waits for {@code p} chunk by chunk, passing each landed chunk to {@code onLanded} (before the piece is verified:
     * the caller must be able to undo what it does with it), and verifies its CRC32C. A piece consumed before returns
     * at once.
     */
    void consume(CheckpointMetadata.Piece p, Landed onLanded) {
        if (consumed.contains(p)) return;
        Integer i = indexOf.get(p);
        if (i == null) throw new IllegalStateException("piece " + p + " was not scheduled for reading");
        MemorySegment dst = stage.asSlice(pieceAt.get(p), p.byteLength());
        CRC32C crc = new CRC32C();
        for (long pos = 0; pos < p.byteLength(); ) {
            long avail = awaitLanded(i, pos);
            for (; pos < avail; ) {
                long n = Math.min(CONSUME_STEP, avail - pos);
                crc.update(dst.asSlice(pos, n).asByteBuffer());
                if (onLanded != null) onLanded.accept(pos, pos + n, lead(bytesRead + pos + n) > leadBytes);
                pos += n;
            }
        }
        awaitFinished(i);
        String got = Crc32c.hex(crc.getValue());
        if (!got.equals(p.crc32c()))
            throw new CheckpointException("file " + dir.resolve(p.file()) + ", tensor " + p.tensor() + " (item " + itemOf(p)
                    + "): CRC32C " + got + " does not match the saved " + p.crc32c() + "; the file is corrupt");
        bytesRead += p.byteLength(); // also where consumption stands in read order (pieces are consumed in it)
        consumed.add(p);
    }

    /** Stops the background reads after the chunk in flight (the load failed; the rest is not needed). */
    synchronized void cancel() {
        cancelled = true;
    }

    /** Bytes the reader has landed beyond {@code consumedUpTo} (both counted in read order). */
    private synchronized long lead(long consumedUpTo) {
        return landedTotal - consumedUpTo;
    }

    private synchronized long awaitLanded(int i, long pos) {
        while (landed[i] <= pos && failed[i] == null && !stopped) waitHere();
        if (failed[i] != null) throw failed[i];
        if (landed[i] <= pos) throw stoppedEarly(i);
        return landed[i];
    }

    private synchronized void awaitFinished(int i) {
        while (finished <= i && failed[i] == null && !stopped) waitHere();
        if (failed[i] != null) throw failed[i];
        if (finished <= i) throw stoppedEarly(i);
    }

    private CheckpointException stoppedEarly(int i) {
        CheckpointMetadata.Piece p = order.get(i);
        return new CheckpointException("file " + dir.resolve(p.file()) + ", tensor " + p.tensor() + ": reading was stopped"
                + " before the piece was read (the load was cancelled)");
    }

    /**
     * Waits uninterruptibly (the reads are bounded), so an interrupt cannot make this rank leave the load's
     * collectives half-way; {@link #interrupted()} tells the loader to set the flag again when the load is over.
     */
    private void waitHere() {
        try {
            wait();
        } catch (InterruptedException e) {
            interruptedWhileWaiting = true;
        }
    }

    /** Whether the loading thread was interrupted while it waited for a read. */
    boolean interrupted() { return interruptedWhileWaiting; }

    private void readAll() {
        try {
            for (int i = 0; i < order.size(); i++) {
                synchronized (this) {
                    if (cancelled) return;
                }
                CheckpointMetadata.Piece p = order.get(i);
                try {
                    readPiece(i, p);
                } catch (CheckpointException e) {
                    fail(i, e);
                } catch (IOException e) {
                    fail(i, new CheckpointException("file " + dir.resolve(p.file()) + ", tensor " + p.tensor() + " (item "
                            + itemOf(p) + "): cannot read: " + e, e));
                } catch (RuntimeException | Error e) {
                    fail(i, new CheckpointException("file " + dir.resolve(p.file()) + ", tensor " + p.tensor() + " (item "
                            + itemOf(p) + "): reading failed unexpectedly: " + e, e));
                }
                synchronized (this) {
                    finished = i + 1;
                    notifyAll();
                }
            }
        } finally {
            synchronized (this) {
                stopped = true;
                notifyAll();
            }
        }
    }

    private void readPiece(int i, CheckpointMetadata.Piece p) throws IOException {
        OpenFile f = open(p);
        String item = itemOf(p);
        if (!f.header().contains(p.tensor()))
            throw new CheckpointException("file " + f.path() + " has no tensor " + p.tensor() + " (item " + item + ")");
        TensorInfo info = f.header().info(p.tensor());
        if (p.byteLength() != 4 * p.length())
            throw new CheckpointException("metadata of " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): "
                    + p.length() + " F32 elements cannot take " + p.byteLength() + " bytes; the metadata is corrupt");
        if (!"F32".equals(info.dtype().name()) || info.byteLength() != p.byteLength())
            throw new CheckpointException("file " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): stored as "
                    + info.dtype() + " with " + info.byteLength() + " bytes, metadata says F32 with " + p.byteLength());
        MemorySegment dst = stage.asSlice(pieceAt.get(p), p.byteLength());
        for (long off = 0; off < dst.byteSize(); ) {
            synchronized (this) {
                if (cancelled) return;
            }
            ByteBuffer bb = dst.asSlice(off, Math.min(READ_CHUNK, dst.byteSize() - off)).asByteBuffer();
            while (bb.hasRemaining()) {
                int n = f.channel().read(bb, p.fileOffset() + off + bb.position());
                if (n < 0) throw new CheckpointException("file " + f.path() + ", tensor " + p.tensor() + " (item " + item
                        + "): ends early (truncated)");
            }
            off += bb.capacity();
            synchronized (this) {
                landedTotal += bb.capacity();
                landed[i] = off;
                notifyAll();
            }
        }
    }

    private synchronized void fail(int i, CheckpointException e) {
        failed[i] = e;
        notifyAll();
    }

    private OpenFile open(CheckpointMetadata.Piece p) {
        OpenFile f = files.get(p.file());
        if (f != null) return f;
        Path path = dir.resolve(p.file());
        SafetensorsReader header = null;
        try {
            header = SafetensorsReader.open(path); // validates the header and that the file is whole
            f = new OpenFile(path, header, FileChannel.open(path, StandardOpenOption.READ));
        } catch (SafetensorsException e) {
            throw new CheckpointException("file " + path + " (items " + itemsIn(p.file()) + "): " + e.getMessage(), e);
        } catch (IOException e) {
            closeQuietly(header);
            throw new CheckpointException("file " + path + " (items " + itemsIn(p.file()) + "): cannot read: " + e, e);
        }
        files.put(p.file(), f);
        return f;
    }

    private String itemOf(CheckpointMetadata.Piece p) {
        for (LoadPlanner.ShardPlan s : plans) for (LoadPlanner.Source src : s.sources()) if (src.piece().equals(p)) return s.item();
        return p.tensor();
    }

    /** Up to 5 items with a piece in {@code file}, for errors about the whole file. */
    private List<String> itemsIn(String file) {
        List<String> out = new ArrayList<>();
        for (LoadPlanner.ShardPlan s : plans)
            for (LoadPlanner.Source src : s.sources())
                if (src.piece().file().equals(file) && !out.contains(s.item()) && out.size() < 5) out.add(s.item());
        return out;
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception ignored) {
            // closing a reader of a file we failed to use
        }
    }

    /**
     * Stops and joins the background thread (it writes into staging), then closes the files. The interrupt ends a read
     * in progress (a failed load does not wait for it; the channel it closes is being closed anyway).
     */
    @Override
    public void close() {
        cancel();
        if (thread != null) {
            thread.interrupt();
            boolean interrupted = false;
            while (true) {
                try {
                    thread.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the thread must not outlive the staging it writes to
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        }
        for (OpenFile f : files.values()) {
            closeQuietly(f.header());
            closeQuietly(f.channel());
        }
        files.clear();
    }
}
