package dev.jtrain.checkpoint;

import dev.jtrain.tensor.state.TensorShard;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One save's copy of this rank's pieces from the live tensors into staging, in file order, published as it goes so
 * that the writer follows right behind it: producer and consumer over one buffer, so a save's disk writes start with
 * its first copied chunk instead of after the whole copy, and the copy is hidden behind the disk.
 *
 * <p>With {@code checksum}, each piece's CRC32C is computed here, right after its bytes are copied and while they are
 * in cache, which keeps the CRC off the writer's path between disk writes. An async save that copies on the training
 * thread leaves the CRC to the writer instead, so that {@code save} blocks for the copy alone.
 *
 * <p>Threading: {@link #run} on one thread (the copier); the writer calls {@link #awaitStaged}, {@link #awaitEnd} and
 * {@link #crc32c} from another.
 */
final class Snapshot {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Copy (and checksum) this much at a time: the CRC pass finds it in cache, and the writer hears of it soon. */
    private static final long STEP_BYTES = 2L << 20;

    private final List<WriteItem> items;
    private final List<TensorShard> live;
    private final MemorySegment staging;
    private final long total;
    private final long[] crcs;
    private final boolean checksum;

    // guarded by this
    private long staged;
    private Throwable failed;
    private boolean ended;
    private long nanos = -1, cpuNanos = -1, endNanos = -1;
    private final CompletableFuture<Void> copied = new CompletableFuture<>();

    Snapshot(List<WriteItem> items, List<TensorShard> live, MemorySegment staging, boolean checksum) {
        this.items = items;
        this.live = live;
        this.staging = staging;
        this.total = items.isEmpty() ? 0 : items.getLast().begin() + items.getLast().bytes();
        this.crcs = new long[items.size()];
        this.checksum = checksum;
    }

    MemorySegment staging() { return staging; }

    /** Copies everything; a failure is kept for the writer (which then fails the save) and rethrown. */
    void run() {
        long t0 = System.nanoTime(), c0 = -1;
        try {
            c0 = Checkpointer.threadCpuNanos();
            PieceCrcs crc = checksum ? new PieceCrcs(items, crcs) : null;
            for (WriteItem w : items) {
                TensorShard t = live.get(w.localIndex());
                for (long e = 0; e < w.length(); ) {
                    int n = (int) Math.min(STEP_BYTES / 4, w.length() - e);
                    MemorySegment.copy(t.data(), Math.toIntExact(t.dataOffset() + e), staging, F32_LE, w.begin() + 4 * e, n);
                    if (crc != null) crc.update(staging, w.begin() + 4 * e, 4L * n);
                    e += n;
                    publish(w.begin() + 4 * e);
                }
            }
            if (crc != null) crc.update(staging, total, 0); // zero-length pieces at the end
            finish(t0, c0, null);
        } catch (RuntimeException | Error e) {
            finish(t0, c0, e);
            throw e;
        }
    }

    /** Whether {@link #crc32c()} holds the checksums (else the writer computes them). */
    boolean checksummed() { return checksum; }

    /** Blocks until staging holds bytes [0, end); throws if the copy failed. */
    synchronized void awaitStaged(long end) throws IOException {
        while (staged < end && failed == null) waitHere();
        if (failed != null) throw new IOException("the copy into staging failed: " + failed, failed);
    }

    /** Blocks until the copy is over, done or failed: only then may the staging buffer be handed out again. */
    synchronized void awaitEnd() {
        boolean interrupted = false;
        while (!ended) {
            try {
                wait();
            } catch (InterruptedException e) {
                interrupted = true; // the copier still writes into the buffer: wait it out
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** Each piece's CRC32C, in write order; complete once the copy has ended without failure. */
    long[] crc32c() { return crcs; }

    /** Ends the snapshot as failed without copying (its copier could not be started). */
    void abort(Throwable why) {
        finish(System.nanoTime(), -1, why);
    }

    /** Completes when the copy is over: normally, or exceptionally with its failure. What awaitSnapshot() waits for. */
    CompletableFuture<Void> copied() { return copied; }

    /** Why the copy failed, or null. */
    synchronized Throwable failure() { return failed; }

    /** When the copy ended ({@link System#nanoTime()}), -1 before. */
    synchronized long endNanos() { return endNanos; }

    /** Wall time of the copy (ns), -1 before it ended. */
    synchronized long nanos() { return nanos; }

    /** CPU time of the copier during the copy (ns), -1 where the JVM cannot tell. */
    synchronized long cpuNanos() { return cpuNanos; }

    private synchronized void publish(long upTo) {
        staged = upTo;
        notifyAll();
    }

    private void finish(long t0, long c0, Throwable failure) {
        synchronized (this) {
            if (ended) return; // first end wins (abort after a run that already failed)
            endNanos = System.nanoTime();
            nanos = endNanos - t0;
            long c1 = Checkpointer.threadCpuNanos();
            cpuNanos = c0 < 0 || c1 < 0 ? -1 : c1 - c0;
            if (failure != null) failed = failure;
            else staged = total;
            ended = true;
            notifyAll();
        }
        if (failure != null) copied.completeExceptionally(failure);
        else copied.complete(null);
    }

    private void waitHere() throws IOException {
        try {
            wait();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the copy into staging", e);
        }
    }
}
