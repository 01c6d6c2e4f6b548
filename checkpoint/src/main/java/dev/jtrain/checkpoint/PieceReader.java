package dev.jtrain.checkpoint;

import dev.jtrain.tensor.io.SafetensorsException;
import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.ShardSource;
import dev.jtrain.tensor.io.SafetensorsIndex;
import dev.jtrain.tensor.io.TensorInfo;


import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.zip.CRC32C;

/**
 * Reads the saved pieces of one load into staging on a background thread, in a fixed order, while the loading thread
 * consumes them as they land: CRC32C chunk by chunk, and whatever the loader does with landed bytes (it swaps them into
 * the live buffers). Disk reads and the CPU work of checking and placing the bytes thus overlap, instead of alternating
 * on one thread — the double-buffering every streaming loader does, here with the whole load's staging as the buffer.
 *
 * <p>Data that is not in the page cache is read with direct I/O into staging laid out to mirror the files
 * ({@link ReadLayout}), as the writer writes it; data that is cached comes through the page cache. The same switch as
 * for writes turns direct I/O off ({@code -Djtrain.checkpoint.directIo=false}).
 *
 * <p>Replicated state loaded without broadcast is read by every rank, directly too: one rank reading through the page
 * cache for the others on its host would halve the disk traffic, but on a VM fresh page-cache memory can cost more
 * than the second read (the guest hands freed pages back to the host, which faults them in again), and on the
 * development VM a 2-rank load was faster with both ranks reading directly (bench/MEASUREMENTS.md, "direct reads on
 * load"). A broadcast load reads each byte once and costs neither.
 *
 * <p>Each piece is checked before its bytes are read: the shard file's safetensors header (parsed once per file, which
 * also checks the file is whole) and the piece's dtype and length against the metadata. Failures are
 * {@link CheckpointException}s naming the file, the tensor and the item, thrown by {@link #consume} of that piece on
 * the loading thread; the background thread moves on to the next run of pieces unless the loader {@link #cancel}s it.
 *
 * <p>Threading: {@link #start} once, then {@link #consume} from the loading thread only; {@link #close} stops and joins
 * the background thread before the staging memory it writes may be reused.
 */
final class PieceReader implements AutoCloseable {
    /**
     * Reads are issued in chunks of the kernel's sequential readahead window (read_ahead_kb = 8192 here); a direct read
     * of this size is two requests of the device's largest (max_sectors_kb = 4096). Larger chunks were no faster
     * (bench/MEASUREMENTS.md, "direct reads on load").
     */
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

    /**
     * An open shard file, with a second channel that reads past the page cache, opened when a run first needs it (null
     * where direct I/O is off or the file system refuses it). Direct reads of data that is not cached cost the kernel
     * almost no CPU, where buffered ones keep the cores busy in the kernel (page-cache allocation and the copy out of
     * it; bench/MEASUREMENTS.md, "direct reads on load") — CPU that the checksums and swaps of the load, and the other
     * rank, need on the same cores.
     */
    private static final class OpenFile {
        private final Path path;
        private final SafetensorsIndex header;
        private final ShardSource source;

        OpenFile(Path path, SafetensorsIndex header, ShardSource source) {
            this.path = path;
            this.header = header;
            this.source = source;
        }

        Path path() { return path; }

        SafetensorsIndex header() { return header; }

        ShardSource source() { return source; }

        void close() {
            source.close();
        }
    }

    private final Path dir;
    private final long leadBytes;
    private final List<LoadPlanner.ShardPlan> plans;
    private final int rank;
    private final Map<String, OpenFile> files = new HashMap<>();   // background thread only, until close
    private final Set<CheckpointMetadata.Piece> consumed = new HashSet<>();
    private final Map<CheckpointMetadata.Piece, Integer> indexOf = new HashMap<>();
    private List<CheckpointMetadata.Piece> order = List.of();
    private Map<CheckpointMetadata.Piece, Long> pieceAt = Map.of();
    private List<ReadLayout.Run> runs = List.of();
    private MemorySegment stage;
    private Thread thread;
    private long bytesRead;

    // Progress, guarded by this: bytes landed per piece, each piece's failure, pieces finished (landed or failed).
    private long[] landed = new long[0];
    private CheckpointException[] failed = new CheckpointException[0];
    private boolean[] finished = new boolean[0];
    private boolean cancelled, stopped;
    private long landedTotal; // bytes landed over all pieces, in read order
    private long directBytes; // bytes read past the page cache (block-aligned spill included)
    private boolean interruptedWhileWaiting; // loading thread only

    /** @param plans the load's plan, to name items in errors */
    private final CheckpointStorage storage;
    private final boolean directIo;

    /** @param leadBytes {@link CheckpointerOptions#loadLeadBytes}; 0 = {@link #LEAD_BYTES} */
    PieceReader(CheckpointStorage storage, Path dir, List<LoadPlanner.ShardPlan> plans, int rank, boolean directIo, long leadBytes) {
        this.storage = storage;
        this.directIo = directIo;
        this.leadBytes = leadBytes == 0 ? LEAD_BYTES : leadBytes;
        this.dir = dir;
        this.plans = plans;
        this.rank = rank;
    }

    /** Starts reading the pieces of {@code layout}, run by run, into {@code stage} (block-aligned) at its offsets. */
    void start(ReadLayout layout, MemorySegment stage) {
        if (thread != null) throw new IllegalStateException("PieceReader started twice");
        List<CheckpointMetadata.Piece> all = new ArrayList<>();
        for (ReadLayout.Run r : layout.runs()) all.addAll(r.pieces());
        for (int i = 0; i < all.size(); i++) indexOf.put(all.get(i), i);
        this.order = all;
        this.runs = layout.runs();
        this.pieceAt = layout.pieceAt();
        this.stage = stage;
        this.landed = new long[all.size()];
        this.failed = new CheckpointException[all.size()];
        this.finished = new boolean[all.size()];
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
            throw new CheckpointCorruptException(dir, "file " + dir.resolve(p.file()) + ", tensor " + p.tensor() + " (item " + itemOf(p)
                    + "): CRC32C " + got + " does not match the saved " + p.crc32c() + "; the file is corrupt", null);
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
        while (!finished[i] && failed[i] == null && !stopped) waitHere();
        if (failed[i] != null) throw failed[i];
        if (!finished[i]) throw stoppedEarly(i);
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
            for (ReadLayout.Run run : runs) {
                synchronized (this) {
                    if (cancelled) return;
                }
                try {
                    readRun(run);
                } catch (IOException e) {
                    failUnfinished(run, (p, item) -> new CheckpointException("file " + dir.resolve(p.file()) + ", tensor "
                            + p.tensor() + " (item " + item + "): cannot read: " + e, e));
                } catch (RuntimeException | Error e) {
                    failUnfinished(run, (p, item) -> e instanceof CheckpointException c ? c : new CheckpointException("file "
                            + dir.resolve(p.file()) + ", tensor " + p.tensor() + " (item " + item + "): reading failed unexpectedly: " + e, e));
                }
            }
        } finally {
            synchronized (this) {
                stopped = true;
                notifyAll();
            }
        }
    }

    /**
     * Checks each piece of {@code run} against its file's header, then reads the run in chunks: directly when the file
     * takes direct I/O and the chunk is not in the page cache (see {@link ReadLayout} for
     * why that needs no copy), else through the page cache. Each chunk publishes what landed of the pieces it covered.
     */
    private void readRun(ReadLayout.Run run) throws IOException {
        CheckpointMetadata.Piece head = run.pieces().getFirst();
        OpenFile f;
        try {
            f = open(head);
        } catch (CheckpointException e) {
            failUnfinished(run, (p, item) -> e);
            return;
        }
        for (int k = 0; k < run.pieces().size(); k++) {
            try {
                check(f, run.pieces().get(k));
            } catch (CheckpointException e) {
                fail(run.first() + k, e); // the others of the run are still read: the loader reports every bad piece's rank
            }
        }
        boolean direct = stage.address() % ReadLayout.ALIGN == 0 && f.source().directAvailable();
        long from = direct ? run.alignedStart() : run.fileStart(), to = direct ? run.alignedEnd() : run.fileEnd();
        long fileSize = f.source().size();
        int landing = 0;
        for (long pos = from; pos < to && pos < run.fileEnd(); ) {
            synchronized (this) {
                if (cancelled) return;
            }
            long n = Math.min(READ_CHUNK, to - pos);
            long probe = Math.min(n, fileSize - pos);
            // a mostly cached chunk goes through the cache, which fetches its missing pages; a cold one goes direct
            // (buffered reads of it would start readahead and copy every byte once more)
            boolean directChunk = direct && !f.source().cached(pos, probe);
            ByteBuffer bb = stage.asSlice(run.stageOf(pos), n).asByteBuffer();
            while (bb.hasRemaining()) {
                long at = pos + bb.position();
                if (at >= fileSize) break; // a direct read's last block may reach past the end of the file
                // staging mirrors the file (see ReadLayout), so an aligned file offset is an aligned address too; after
                // a short read the rest goes through the page cache, which takes any offset
                boolean aligned = at % ReadLayout.ALIGN == 0 && bb.remaining() % ReadLayout.ALIGN == 0;
                boolean d = directChunk && aligned && f.source().directAvailable();
                int got;
                try {
                    got = d ? f.source().readDirect(bb, at) : f.source().read(bb, at);
                } catch (IOException e) {
                    if (!d) throw e;
                    // a file system that took O_DIRECT at open but refuses the reads (as shard sinks meet on writes):
                    // this file is read through the page cache from here on
                    f.source().refuseDirect();
                    continue;
                }
                if (got < 0) break;
                if (d) addDirect(got);
            }
            long end = pos + bb.position();
            if (end < Math.min(pos + n, run.fileEnd())) {
                landing = landedUpTo(run, landing, Math.max(end, run.fileStart())); // the pieces before it are whole
                CheckpointMetadata.Piece p = run.pieces().get(landing);
                throw new CheckpointCorruptException(dir, "file " + f.path() + ", tensor " + p.tensor() + " (item " + itemOf(p) + "): the"
                        + " file ends at byte " + f.source().size() + ", before the tensor's last byte at "
                        + (p.fileOffset() + p.byteLength()) + " (truncated)", null);
            }
            landing = landedUpTo(run, landing, Math.min(end, run.fileEnd()));
            pos += n;
        }
        landedUpTo(run, landing, run.fileEnd()); // a run of pieces of length 0 reads nothing
    }

    private synchronized void addDirect(long n) {
        directBytes += n;
    }

    /** Bytes read so far past the page cache, with direct I/O. */
    synchronized long directBytes() { return directBytes; }

    /**
     * Publishes that the bytes of {@code run} before file offset {@code end} have landed, looking at its pieces from
     * index {@code from} on (those before have landed whole); returns the index of the first piece still landing.
     */
    private synchronized int landedUpTo(ReadLayout.Run run, int from, long end) {
        int next = from;
        for (int k = from; k < run.pieces().size(); k++) {
            CheckpointMetadata.Piece p = run.pieces().get(k);
            if (p.fileOffset() > end) break;
            int i = run.first() + k;
            long now = Math.clamp(end - p.fileOffset(), 0, p.byteLength());
            landedTotal += now - landed[i];
            landed[i] = now;
            if (now == p.byteLength()) finished[i] = true;
            if (finished[i] && next == k) next = k + 1;
        }
        notifyAll();
        return next;
    }

    /** Validates {@code p} against its file's header and its own metadata before its bytes are trusted. */
    private void check(OpenFile f, CheckpointMetadata.Piece p) {
        String item = itemOf(p);
        if (!f.header().contains(p.tensor()))
            throw new CheckpointCorruptException(dir, "file " + f.path() + " has no tensor " + p.tensor() + " (item " + item + ")", null);
        TensorInfo info = f.header().info(p.tensor());
        if (p.byteLength() != 4 * p.length())
            throw new CheckpointCorruptException(dir, "metadata of " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): "
                    + p.length() + " F32 elements cannot take " + p.byteLength() + " bytes; the metadata is corrupt", null);
        if (!"F32".equals(info.dtype().name()) || info.byteLength() != p.byteLength())
            throw new CheckpointCorruptException(dir, "file " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): stored as "
                    + info.dtype() + " with " + info.byteLength() + " bytes, metadata says F32 with " + p.byteLength(), null);
        long at = f.header().dataStart() + info.begin();
        if (p.fileOffset() != at)
            throw new CheckpointCorruptException(dir, "metadata of " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): says the"
                    + " bytes start at offset " + p.fileOffset() + ", the file's header at " + at + "; the metadata is corrupt", null);
        // landed ranges are placed float by float (LiveSwaps), from chunk boundaries counted in file offsets
        if (at % 4 != 0)
            throw new CheckpointCorruptException(dir, "file " + f.path() + ", tensor " + p.tensor() + " (item " + item + "): F32 data at"
                    + " offset " + at + ", not a multiple of 4; this writer's files align their data, rewrite the file with it", null);
    }

    /** Fails every piece of {@code run} that has not finished landing with {@code why(piece, item)}. */
    private synchronized void failUnfinished(ReadLayout.Run run, BiFunction<CheckpointMetadata.Piece, String, CheckpointException> why) {
        for (int k = 0; k < run.pieces().size(); k++) {
            int i = run.first() + k;
            if (!finished[i] && failed[i] == null) failed[i] = why.apply(run.pieces().get(k), itemOf(run.pieces().get(k)));
        }
        notifyAll();
    }

    private synchronized void fail(int i, CheckpointException e) {
        failed[i] = e;
        notifyAll();
    }

    private OpenFile open(CheckpointMetadata.Piece p) {
        OpenFile f = files.get(p.file());
        if (f != null) return f;
        Path path = dir.resolve(p.file());
        ShardSource source = null;
        try {
            source = storage.openShard(dir, p.file(), directIo);
            // validates the header and that the data section it describes is whole
            f = new OpenFile(path, SafetensorsIndex.read(path, source.size(), source::read), source);
        } catch (SafetensorsException e) {
            if (source != null) source.close();
            throw new CheckpointCorruptException(dir, "file " + path + " (items " + itemsIn(p.file()) + "): " + e.getMessage(), e);
        } catch (java.nio.file.NoSuchFileException e) { // a committed checkpoint without one of its files is incomplete
            if (source != null) source.close();
            throw new CheckpointCorruptException(dir, "file " + path + " (items " + itemsIn(p.file()) + ") is missing: " + e.getMessage(), e);
        } catch (IOException e) { // the storage failed, not the checkpoint
            if (source != null) source.close();
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
        for (OpenFile f : files.values()) f.close();
        files.clear();
    }
}
