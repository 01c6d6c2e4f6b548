package dev.jtrain.comm.transport.tcp;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.HeldBuffer;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.UnexpectedBudget;

import java.lang.foreign.MemorySegment;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * {@link Transport} over a full mesh of persistent TCP connections, one per pair of ranks, set up through the
 * store (see {@link TcpBootstrap}) and framed as in {@link TcpWireDescriptor}.
 *
 * <p>Data path: a send writes header and payload straight from the caller's segment with a gathering write; each
 * link's reader thread reads payloads straight into the posted receive's segment. Segments of native memory go
 * to the socket without a user-space copy; heap segments of other types (float[] gradients) are staged chunk by chunk
 * through a direct buffer each link keeps per direction, so callers hand any segment to the transport.
 *
 * <p>Failure: a peer whose process dies closes its sockets, so the reader sees end-of-stream at once and every
 * pending and later call on that link fails with a {@link CommException} naming the peer. A hung peer is caught
 * by deadlines: receives wait on a condition with a deadline, and a watchdog closes links whose write is past its
 * deadline.
 *
 * <p>Threading: as {@link Transport}. One reader thread per peer plus one watchdog thread.
 */
public final class TcpTransport implements Transport {
    private static final long WATCHDOG_TICK_MS = 20;

    private final int rank;
    private final int size;
    private final long timeoutMs;
    private final PeerLink[] links;
    /** Sends to oneself complete at once (a copy), so they are not held to the budget. */
    private final PostedRecvs self = new PostedRecvs(new UnexpectedBudget(Long.MAX_VALUE));
    private final long rejectedStrangers;
    private final Thread watchdog;
    private volatile boolean closed;

    private TcpTransport(int rank, int size, long timeoutMs, SocketChannel[] channels, String[] peerNames, long rejectedStrangers,
                         UnexpectedBudget budget) {
        this.rank = rank;
        this.size = size;
        this.timeoutMs = timeoutMs;
        this.rejectedStrangers = rejectedStrangers;
        this.links = new PeerLink[size];
        for (int p = 0; p < size; p++) {
            if (p != rank) links[p] = new PeerLink(rank, p, peerNames[p], channels[p], timeoutMs, budget);
        }
        for (PeerLink l : links) if (l != null) l.start();
        this.watchdog = Thread.ofPlatform().daemon().name("jtrain-tcp-watchdog-r" + rank).start(this::watch);
    }

    /**
     * Connects rank {@code rank} of {@code size} to all others through {@code store}; blocks until the mesh is
     * complete or {@code options.timeoutMs()} passes.
     */
    public static TcpTransport connect(Store store, int rank, int size, TcpTransportOptions options) {
        return connect(store, rank, size, options, UnexpectedBudget.defaults());
    }

    /** As above, holding early messages within {@code budget} (shared with the rank's other transports). */
    public static TcpTransport connect(Store store, int rank, int size, TcpTransportOptions options, UnexpectedBudget budget) {
        if (size < 1 || rank < 0 || rank >= size) throw new IllegalArgumentException("bad rank/size: rank=" + rank + " size=" + size);
        TcpBootstrap boot = new TcpBootstrap(rank, size, options);
        SocketChannel[] channels = boot.connectAll(store);
        String[] names;
        try {
            names = boot.peerNames(store, channels);
        } catch (RuntimeException e) {
            for (SocketChannel c : channels) TcpBootstrap.closeQuietly(c);
            throw e;
        }
        return new TcpTransport(rank, size, options.timeoutMs(), channels, names, boot.rejected.get(), budget);
    }

    /** Connections refused during set-up (strangers, wrong token or group). */
    public long rejectedConnections() { return rejectedStrangers; }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    @Override public long timeoutMs() { return timeoutMs; }

    private String where(String op, int peer, int tag) {
        return "tcp transport rank " + rank + " " + op + " peer=" + peer + " tag=" + tag;
    }

    private void check(String op, int peer, int tag) {
        if (peer < 0 || peer >= size) throw new IllegalArgumentException("peer out of range: rank=" + rank + " op=" + op + " peer=" + peer + " size=" + size);
        if (closed) throw new CommException(where(op, peer, tag) + ": transport is closed");
    }

    @Override
    public void send(int peer, int tag, MemorySegment src) {
        check("send", peer, tag);
        if (peer == rank) {
            HeldBuffer copy = HeldBuffer.allocate(src.byteSize());
            copy.data().copyFrom(src);
            self.buffer(tag, copy);
            return;
        }
        links[peer].send(tag, src);
    }

    @Override
    public void recv(int peer, int tag, MemorySegment dst) {
        check("recv", peer, tag);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Pending p = post(peer, tag, dst);
        await(p, deadline);
    }

    @Override
    public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
        check("sendRecv", to, tag);
        check("sendRecv", from, tag);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        // Post the receive first: the reader thread then streams the incoming message into dst while this thread
        // is still writing the outgoing one, so both directions move at once.
        sendThenAwait("sendRecv", to, src, post(from, tag, dst), deadline);
    }

    /** Sends (unless {@code to < 0}) while the posted receive {@code p} fills, then waits for it. */
    private void sendThenAwait(String op, int to, MemorySegment src, Pending p, long deadline) {
        if (to >= 0) {
            try {
                send(to, p.tag, src);
            } catch (RuntimeException e) {
                RuntimeException failure = rootCause(op, to, p.peer, p.tag, e); // before abandon, which may break that link
                abandon(p);
                throw failure;
            }
        }
        await(p, deadline);
    }

    /** How long a failed send waits to learn whether the rank it receives from is gone as well. */
    private static final long CASCADE_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /**
     * When a rank dies, its neighbours fail and exit too, so a send to {@code to} may fail because {@code to} gave
     * up on the rank we were receiving from. If that link broke as well, the receive side is named first: it is the
     * likelier root cause, and the survivor's error then points at the rank that actually died.
     */
    private RuntimeException rootCause(String op, int to, int from, int tag, RuntimeException sendFailure) {
        if (!(sendFailure instanceof CommException) || from == to || from == rank || links[from] == null) return sendFailure;
        CommException recvSide = links[from].brokenWithin(CASCADE_GRACE_NANOS);
        if (recvSide == null) return sendFailure;
        return new CommException(where(op, from, tag) + ": " + recvSide.getMessage() + " (the send to peer rank " + to
                + " failed as well: " + sendFailure.getMessage() + ")", recvSide);
    }

    /**
     * The link's reader thread folds the incoming message into {@code acc} piece by piece as it arrives, so the
     * reduction of a reduce-scatter step overlaps the transfer instead of following it.
     */
    @Override
    public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner combiner) {
        Combiner.requireWholeElements(acc, combiner);
        if (!combinesOnArrival(to, from) || !links[from].readerCanAccess(acc)) {
            Transport.super.sendRecvCombine(to, src, from, acc, tag, combiner);
            return;
        }
        if (to >= 0) check("sendRecvCombine", to, tag);
        check("sendRecvCombine", from, tag);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Pending p = new Pending(from, tag, acc, acc, links[from].postRecv(tag, acc, combiner));
        sendThenAwait("sendRecvCombine", to, src, p, deadline);
    }

    @Override
    public boolean combinesOnArrival(int to, int from) {
        return from >= 0 && from < size && from != rank && to != rank && to < size && links[from] != null;
    }

    /** A posted receive, possibly into a bounce buffer when the reader thread may not touch the caller's segment. */
    private record Pending(int peer, int tag, MemorySegment dst, MemorySegment target, PostedRecvs.Posted posted) { }

    private Pending post(int peer, int tag, MemorySegment dst) {
        if (peer == rank) {
            return new Pending(peer, tag, dst, dst, self.post(tag, dst, () -> where("recv", peer, tag)));
        }
        PeerLink link = links[peer];
        MemorySegment target = link.readerCanAccess(dst) ? dst : PostedRecvs.allocateBuffer(dst.byteSize());
        return new Pending(peer, tag, dst, target, link.postRecv(tag, target));
    }

    private void await(Pending p, long deadline) {
        if (p.peer == rank) {
            self.await(p.posted, p.tag, deadline, () -> where("recv", p.peer, p.tag), () -> { }, timeoutMs);
        } else {
            links[p.peer].awaitRecv(p.posted, p.tag, deadline);
        }
        if (p.target != p.dst) p.dst.copyFrom(p.target);
    }

    private void abandon(Pending p) {
        if (p.peer == rank) self.abandon(p.posted, p.tag, () -> { });
        else links[p.peer].abandonRecv(p.posted, p.tag);
    }

    @Override
    public LinkKind linkKind(int peer) {
        if (peer < 0 || peer >= size) throw new IllegalArgumentException("peer out of range: peer=" + peer + " size=" + size);
        return peer == rank ? LinkKind.SELF : LinkKind.TCP;
    }

    private void watch() {
        while (!closed) {
            long now = System.nanoTime();
            for (PeerLink l : links) if (l != null) l.checkWriteDeadline(now);
            try {
                Thread.sleep(WATCHDOG_TICK_MS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        CommException reason = new CommException("tcp transport rank " + rank + " was closed");
        self.fail(reason);
        self.freeBuffered();
        for (PeerLink l : links) if (l != null) l.close(reason);
        watchdog.interrupt();
    }
}
