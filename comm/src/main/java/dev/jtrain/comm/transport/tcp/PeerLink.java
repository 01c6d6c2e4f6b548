package dev.jtrain.comm.transport.tcp;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.HeldBuffer;
import dev.jtrain.comm.transport.UnexpectedBudget;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

import static dev.jtrain.comm.transport.tcp.TcpWireDescriptor.*;

/**
 * One persistent connection to one peer: senders write frames on the caller's thread; a dedicated reader thread
 * drains the socket all the time, streaming each payload into its posted receive when there is one. Because the
 * reader does not wait for the application (it buffers early messages within the transport's
 * {@link UnexpectedBudget}), a ring of simultaneous sendRecv calls can not deadlock whatever the message size, nor
 * a cycle of blocking sends up to the budget.
 *
 * <p>The channel stays in blocking mode (fewest system calls, no selector wake-ups); a blocked write is bounded by
 * the transport's watchdog, which closes the channel when a write passes its deadline.
 *
 * <p>Threading: sends are serialised by {@link #sendLock}; receives by tag as {@link PostedRecvs} allows.
 */
final class PeerLink {
    /** Largest slice handed to one write/read call (bounds NIO's temporary direct buffer for heap segments). */
    private static final long CHUNK_BYTES = 4L << 20;

    private final int rank;
    private final int peer;
    /** {@code peer=N host=name/address}, for messages. */
    private final String peerName;
    private final SocketChannel channel;
    private final long timeoutMs;
    private final PostedRecvs recvs;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final ByteBuffer sendHeader = ByteBuffer.allocateDirect(FRAME_HEADER_LENGTH);
    private final Thread reader;
    private volatile long writeDeadlineNanos;
    private volatile boolean writeTimedOut;
    private volatile CommException broken;

    PeerLink(int rank, int peer, String peerName, SocketChannel channel, long timeoutMs, UnexpectedBudget budget) {
        this.rank = rank;
        this.recvs = new PostedRecvs(budget);
        this.peer = peer;
        this.peerName = peerName;
        this.channel = channel;
        this.timeoutMs = timeoutMs;
        this.reader = Thread.ofPlatform().daemon().name("jtrain-tcp-r" + rank + "-from-" + peer).unstarted(this::readLoop);
    }

    void start() { reader.start(); }

    private String where(String op, int tag, long bytes) {
        return "tcp transport rank " + rank + " " + op + " " + peerName + " tag=" + tag + " bytes=" + bytes;
    }

    void send(int tag, MemorySegment src) {
        long len = src.byteSize();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        try {
            if (!sendLock.tryLock(timeoutMs, TimeUnit.MILLISECONDS)) {
                throw new CommTimeoutException(where("send", tag, len) + ": another send to this peer did not finish within " + timeoutMs + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException(where("send", tag, len) + ": interrupted", e);
        }
        try {
            CommException b = broken;
            if (b != null) throw new CommException(where("send", tag, len) + ": link unusable: " + b.getMessage(), b);
            sendHeader.clear();
            sendHeader.putInt(FRAME_MAGIC).putInt(tag).putLong(len).flip();
            writeDeadlineNanos = deadline;
            ByteBuffer[] pair = new ByteBuffer[2];
            pair[0] = sendHeader;
            long off = 0;
            do {
                long n = Math.min(CHUNK_BYTES, len - off);
                ByteBuffer body = sendView(src, off, n);
                if (sendHeader.hasRemaining()) {
                    pair[1] = body; // header and first chunk in one system call: one packet for small messages
                    while (sendHeader.hasRemaining() || body.hasRemaining()) channel.write(pair);
                } else {
                    while (body.hasRemaining()) channel.write(body);
                }
                off += n;
            } while (off < len);
        } catch (IOException e) {
            CommException ce = writeTimedOut
                    ? new CommTimeoutException(where("send", tag, len) + ": peer did not take the data within " + timeoutMs
                    + " ms (hung or stopped, or it posted no receive for this and its unexpected-message budget is full)", e)
                    : new CommException(where("send", tag, len) + ": connection to peer rank " + peer
                    + " lost (" + e + "); " + WHY_LOST, e);
            breakLink(ce);
            throw ce;
        } finally {
            writeDeadlineNanos = 0;
            sendLock.unlock();
        }
    }

    /** Posts a receive; complete it with {@link #awaitRecv}. */
    PostedRecvs.Posted postRecv(int tag, MemorySegment dst) { return postRecv(tag, dst, null); }

    /** Posts a receive whose message is folded into {@code dst} with {@code combiner} (null: copied). */
    PostedRecvs.Posted postRecv(int tag, MemorySegment dst, Combiner combiner) {
        return recvs.post(tag, dst, combiner, () -> where("recv", tag, dst.byteSize()));
    }

    void awaitRecv(PostedRecvs.Posted p, int tag, long deadlineNanos) {
        Supplier<String> where = () -> where("recv", tag, p.dst.byteSize());
        recvs.await(p, tag, deadlineNanos, where, () -> breakLink(new CommTimeoutException(where.get()
                + ": timed out in the middle of a message; link closed")), timeoutMs);
    }

    void abandonRecv(PostedRecvs.Posted p, int tag) {
        recvs.abandon(p, tag, () -> breakLink(new CommException(where("recv", tag, p.dst.byteSize())
                + ": receive abandoned in the middle of a message; link closed")));
    }

    /** Whether the reader thread may write into {@code dst} (segments of confined arenas may not). */
    boolean readerCanAccess(MemorySegment dst) { return dst.isAccessibleBy(reader); }

    private void readLoop() {
        ByteBuffer header = ByteBuffer.allocateDirect(FRAME_HEADER_LENGTH);
        try {
            while (true) {
                header.clear();
                readFully(header);
                header.flip();
                int magic = header.getInt();
                int tag = header.getInt();
                long len = header.getLong();
                if (magic != FRAME_MAGIC || len < 0) {
                    throw new CommException(String.format("tcp transport rank %d: corrupt frame from peer rank %d "
                            + "(magic=0x%08x length=%d); stream out of sync, link closed", rank, peer, magic, len));
                }
                PostedRecvs.Posted p = recvs.claim(tag, len);
                if (p == null) {
                    HeldBuffer buf = HeldBuffer.allocate(len);
                    try {
                        readInto(buf.data());
                    } catch (IOException | RuntimeException e) {
                        buf.close();
                        recvs.unreserve(len); // claim() reserved it for this message, which never arrives whole
                        throw e;
                    }
                    recvs.buffer(tag, buf);
                } else if (p.dst.byteSize() != len) {
                    try (HeldBuffer discard = HeldBuffer.allocate(len)) {
                        readInto(discard.data()); // keep the stream in sync, then report
                    }
                    recvs.release(p, new CommException("length mismatch, receiver expects " + p.dst.byteSize()
                            + " bytes but peer rank " + peer + " sent " + len + "; the ranks issued different operations"));
                } else {
                    try {
                        if (p.combiner == null) readInto(p.dst);
                        else readCombining(p.dst, p.combiner);
                    } catch (IOException | RuntimeException e) {
                        CommException ce = lost(e);
                        recvs.release(p, ce);
                        throw ce;
                    }
                    recvs.release(p, null);
                }
            }
        } catch (CommException e) {
            breakLink(e);
        } catch (IOException | RuntimeException e) {
            breakLink(lost(e));
        } catch (InterruptedException e) {
            breakLink(new CommException("tcp transport rank " + rank + ": reader for peer rank " + peer + " interrupted"));
        }
    }

    private CommException lost(Exception e) {
        CommException b = broken;
        if (b != null) return b;
        if (e instanceof RuntimeException && !(e instanceof CommException)) {
            return new CommException("tcp transport rank " + rank + ": the reader for peer rank " + peer + " failed while"
                    + " delivering a message (" + e + "); link closed. The connection itself was fine: this is a fault on"
                    + " this rank (a receive buffer freed while in use, or a bug in jtrain)", e);
        }
        return new CommException("tcp transport rank " + rank + ": connection from peer rank " + peer + " (" + peerName + ") lost ("
                + (e instanceof EOFException ? "closed by peer" : e.toString())
                + "); " + WHY_LOST, e);
    }

    /**
     * A link closes when its peer's process ends, and also when the peer gave up on a message that stopped half-way
     * (a receive that timed out mid-message closes its link): a live peer is then behind the loss too.
     */
    private static final String WHY_LOST = "that process exited or was killed, or it closed the link after one of its"
            + " own operations timed out; check its log";

    private void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) throw new EOFException("end of stream");
        }
    }

    private void readInto(MemorySegment dst) throws IOException {
        long len = dst.byteSize();
        for (long off = 0; off < len; ) {
            long n = Math.min(CHUNK_BYTES, len - off);
            MemorySegment part = dst.asSlice(off, n);
            if (hasByteBufferView(part)) {
                readFully(part.asByteBuffer());
            } else {
                ByteBuffer b = staging(true, n);
                readFully(b);
                MemorySegment.copy(MemorySegment.ofBuffer(b.flip()), 0, part, 0, n);
            }
            off += n;
        }
    }

    /**
     * Reads the message in pieces small enough to stay in cache and folds each into {@code acc} while the socket
     * fills the next: the reduction runs on this reader thread, overlapped with the caller's send, and the received
     * bytes are never written out to a scratch buffer in memory and read back.
     */
    private void readCombining(MemorySegment acc, Combiner c) throws IOException {
        if (combineStaging == null) {
            combineStaging = ByteBuffer.allocateDirect(COMBINE_PIECE_BYTES);
            combinePiece = MemorySegment.ofBuffer(combineStaging); // the whole buffer, whatever its position later
        }
        MemorySegment piece = combinePiece;
        long len = acc.byteSize();
        for (long off = 0; off < len; ) {
            int n = (int) Math.min(COMBINE_PIECE_BYTES, len - off); // whole elements: len and the piece size are multiples
            combineStaging.clear().limit(n);
            readFully(combineStaging);
            c.combine(acc.asSlice(off, n), piece, n / c.elementBytes());
            off += n;
        }
    }

    /** Half of a typical 512 KiB-2 MiB L2, a multiple of every element size. */
    private static final int COMBINE_PIECE_BYTES = 256 << 10;
    private ByteBuffer combineStaging;
    private MemorySegment combinePiece;

    /**
     * Off-heap and byte[] segments are written straight from their memory; a float[]/long[] heap segment has no
     * ByteBuffer view, so its chunk goes through a direct staging buffer (one extra copy, reused, one per direction).
     */
    private ByteBuffer sendView(MemorySegment src, long off, long n) {
        MemorySegment part = src.asSlice(off, n);
        if (hasByteBufferView(part)) return part.asByteBuffer();
        ByteBuffer b = staging(false, n);
        MemorySegment.copy(part, 0, MemorySegment.ofBuffer(b), 0, n);
        return b;
    }

    private static boolean hasByteBufferView(MemorySegment s) {
        return s.isNative() || s.heapBase().map(o -> o instanceof byte[]).orElse(false);
    }

    private ByteBuffer sendStaging, recvStaging;

    private ByteBuffer staging(boolean recv, long n) {
        ByteBuffer b = recv ? recvStaging : sendStaging;
        if (b == null) {
            b = ByteBuffer.allocateDirect((int) CHUNK_BYTES);
            if (recv) recvStaging = b;
            else sendStaging = b;
        }
        b.clear().limit((int) n);
        return b;
    }

    /**
     * Why this link broke, waiting up to {@code graceNanos} for it to break; null if it still works. Lets a failed
     * send ask whether the rank it was receiving from died too (the usual root cause when ranks fail in a cascade).
     */
    CommException brokenWithin(long graceNanos) {
        long until = System.nanoTime() + graceNanos;
        while (broken == null && System.nanoTime() - until < 0) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return broken;
    }

    /** Called by the watchdog: a write past its deadline means the peer stopped reading. */
    void checkWriteDeadline(long nowNanos) {
        long d = writeDeadlineNanos;
        if (d != 0 && nowNanos - d > 0 && broken == null) {
            writeTimedOut = true;
            breakLink(new CommTimeoutException("tcp transport rank " + rank + ": send to peer rank " + peer + " (" + peerName + ")"
                    + " did not complete within " + timeoutMs + " ms; link closed"));
        }
    }

    /** Marks the link unusable, fails every waiting receive and closes the socket (which stops blocked I/O). */
    void breakLink(CommException cause) {
        synchronized (this) {
            if (broken == null) broken = cause;
        }
        recvs.fail(broken);
        try {
            channel.close();
        } catch (IOException ignored) {
            // already failing
        }
    }

    void close(CommException reason) {
        breakLink(reason);
        try {
            reader.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!reader.isAlive()) recvs.freeBuffered();
    }
}
