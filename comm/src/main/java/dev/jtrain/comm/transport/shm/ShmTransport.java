package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.SegmentAccess;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.UnexpectedBudget;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@link Transport} between processes of one host through single-producer single-consumer byte rings in shared
 * memory (layout: {@link ShmRingDescriptor}), one ring per ordered pair of ranks. Each byte is copied twice
 * (sender into the ring, ring into the receiver's buffer), like MPI's shared-memory transports without
 * kernel-assisted copies; the ring is small enough to stay in the shared cache while the pair streams through it.
 *
 * <p>No background threads: the calling thread copies and, while it waits, spins briefly and then parks with
 * growing sleeps ({@link Backoff}). A blocked send drains the inbound ring from the same peer at once, and any call
 * that has made no progress for {@link #DRAIN_OTHERS_AFTER_NANOS} drains every inbound ring, buffering messages
 * whose receive is not posted yet within the {@link UnexpectedBudget}. So a cycle of blocking sends at any world
 * size completes like it does over TCP (whose reader threads buffer), with memory bounded by the budget: past it, a
 * message stays in the ring and its sender waits. {@code sendRecv} alternates both directions.
 *
 * <p>Failure: a peer that closes sets a flag in the ring header; a peer that is killed is found by checking its
 * PID while waiting. Either fails pending and later calls on that peer with a {@link CommException}.
 *
 * <p>Threading: as {@link Transport}. A ring direction is used by one thread at a time (its pipe's lock).
 */
public final class ShmTransport implements Transport {
    /** Bytes moved per step before switching direction, so both directions of sendRecv advance together. */
    private static final long STEP_BYTES = 256 * 1024;
    /**
     * How long a call waits on its own peers before it also drains the other inbound rings. Not at once: in a
     * collective the other rings usually hold a later step's message, and buffering it early costs a copy.
     */
    static final long DRAIN_OTHERS_AFTER_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final int rank;
    private final int size;
    private final long timeoutMs;
    private final Arena arena;
    private final InboundPipe[] inbound;
    private final OutboundPipe[] outbound;
    private final SelfMailbox self = new SelfMailbox();
    private final AtomicInteger active = new AtomicInteger();
    /** More ranks on this host than cores: waits must give the core away almost at once ({@link Backoff}). */
    private final boolean oversubscribed;
    private volatile boolean closed;

    private ShmTransport(int rank, int size, long timeoutMs, Arena arena, ShmBootstrap.Rings rings, int capacity,
                         UnexpectedBudget budget) {
        this.rank = rank;
        this.size = size;
        this.timeoutMs = timeoutMs;
        this.arena = arena;
        this.inbound = new InboundPipe[size];
        this.outbound = new OutboundPipe[size];
        for (int p = 0; p < size; p++) {
            if (rings.inbound()[p] != null) inbound[p] = new InboundPipe(p, rings.inbound()[p], capacity, budget);
            if (rings.outbound()[p] != null) outbound[p] = new OutboundPipe(p, rings.outbound()[p], capacity);
        }
        int onHost = 1 + (int) Arrays.stream(inbound).filter(Objects::nonNull).count();
        this.oversubscribed = onHost > Runtime.getRuntime().availableProcessors();
    }

    /** Connects this rank to every other rank of the group through shared memory (all must be on this host). */
    public static ShmTransport connect(Store store, int rank, int size, ShmTransportOptions options) {
        boolean[] all = new boolean[size];
        Arrays.fill(all, true);
        all[rank] = false;
        return connect(store, rank, size, all, options);
    }

    /**
     * Connects this rank to the ranks with {@code shmPeer[p]} set; the relation must be symmetric across ranks.
     * Other peers are not reachable through this transport (see {@code HybridTransport}).
     */
    public static ShmTransport connect(Store store, int rank, int size, boolean[] shmPeer, ShmTransportOptions options) {
        return connect(store, rank, size, shmPeer, options, UnexpectedBudget.defaults());
    }

    /** As above, holding early messages within {@code budget} (shared with the rank's other transports). */
    public static ShmTransport connect(Store store, int rank, int size, boolean[] shmPeer, ShmTransportOptions options,
                                       UnexpectedBudget budget) {
        if (size < 1 || rank < 0 || rank >= size || shmPeer.length != size) {
            throw new IllegalArgumentException("bad rank/size: rank=" + rank + " size=" + size + " peers=" + shmPeer.length);
        }
        boolean[] peers = shmPeer.clone();
        peers[rank] = false;
        Arena arena = Arena.ofShared();
        try {
            ShmBootstrap.Rings rings = ShmBootstrap.connect(store, rank, size, peers, options, arena);
            return new ShmTransport(rank, size, options.timeoutMs(), arena, rings, options.ringBytes(), budget);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return size; }

    @Override public long timeoutMs() { return timeoutMs; }

    private String where(String op, int peer, int tag) {
        return "shm transport rank " + rank + " " + op + " peer=" + peer + " tag=" + tag;
    }

    private void enter(String op, int peer, int tag) {
        if (peer < 0 || peer >= size) throw new IllegalArgumentException("peer out of range: rank=" + rank + " op=" + op + " peer=" + peer + " size=" + size);
        active.incrementAndGet();
        if (closed) {
            active.decrementAndGet();
            throw new CommException(where(op, peer, tag) + ": transport is closed");
        }
        if (peer != rank && inbound[peer] == null) {
            active.decrementAndGet();
            throw new IllegalArgumentException(where(op, peer, tag) + ": peer is not connected through shared memory");
        }
    }

    private void exit() { active.decrementAndGet(); }

    private static long deadline(long timeoutMs) { return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs); }

    @Override
    public void send(int peer, int tag, MemorySegment src) {
        enter("send", peer, tag);
        try {
            if (peer == rank) {
                self.put(tag, src);
                return;
            }
            exchange(peer, tag, src, -1, null, null, deadline(timeoutMs), "send");
        } finally {
            exit();
        }
    }

    @Override
    public void recv(int peer, int tag, MemorySegment dst) {
        enter("recv", peer, tag);
        try {
            long deadline = deadline(timeoutMs);
            if (peer == rank) {
                self.take(tag, dst, deadline, where("recv", peer, tag), timeoutMs);
                return;
            }
            exchange(-1, tag, null, peer, dst, null, deadline, "recv");
        } finally {
            exit();
        }
    }

    @Override
    public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
        enter("sendRecv", to, tag);
        try {
            enter("sendRecv", from, tag);
            try {
                long deadline = deadline(timeoutMs);
                if (to == rank) {
                    self.put(tag, src);
                    to = -1;
                }
                if (from == rank) {
                    if (to >= 0) exchange(to, tag, src, -1, null, null, deadline, "sendRecv");
                    self.take(tag, dst, deadline, where("sendRecv", from, tag), timeoutMs);
                    return;
                }
                exchange(to, tag, src, from, dst, null, deadline, "sendRecv");
            } finally {
                exit();
            }
        } finally {
            exit();
        }
    }

    /**
     * Folds the incoming message into {@code acc} straight from the ring: the reduce-scatter step of a ring or
     * halving-doubling all-reduce then reads each received byte once, where receiving into scratch and reducing
     * after reads it three times (ring → scratch, scratch → reduce).
     */
    @Override
    public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner combiner) {
        Combiner.requireWholeElements(acc, combiner);
        if (!combinesOnArrival(to, from) || !SegmentAccess.anyThreadMayAccess(acc)) {
            Transport.super.sendRecvCombine(to, src, from, acc, tag, combiner);
            return;
        }
        if (to >= 0) enter("sendRecvCombine", to, tag);
        try {
            enter("sendRecvCombine", from, tag);
            try {
                exchange(to, tag, src, from, acc, combiner, deadline(timeoutMs), "sendRecvCombine");
            } finally {
                exit();
            }
        } finally {
            if (to >= 0) exit();
        }
    }

    @Override
    public boolean combinesOnArrival(int to, int from) {
        return from != rank && to != rank && from >= 0 && from < size && inbound[from] != null
                && (to < 0 || (to < size && outbound[to] != null));
    }

    /**
     * Sends {@code src} to {@code to} (if {@code to >= 0}) while receiving {@code dst} from {@code from} (if
     * {@code from >= 0}; folded into it with {@code combiner} when that is not null), alternating steps of both
     * until done, the deadline, a dead peer or close.
     */
    private void exchange(int to, int tag, MemorySegment src, int from, MemorySegment dst, Combiner combiner, long deadline,
                          String op) {
        OutboundPipe out = to >= 0 ? outbound[to] : null;
        InboundPipe in = from >= 0 ? inbound[from] : null;
        // While our send is stuck (ring full, or another thread of ours holds the ring) we drain the ring coming
        // back from the same peer into buffers: the peer may be stuck sending to us for the same reason, and one
        // of the two must give way or both wait forever (two ranks sending large messages to each other at once).
        InboundPipe back = to >= 0 ? inbound[to] : null;
        int peerForErrors = to >= 0 ? to : from;
        MemorySegment target = null;
        InboundPipe.Recv recv = null;
        if (in != null) {
            target = SegmentAccess.anyThreadMayAccess(dst) ? dst : Arena.ofAuto().allocate(Math.max(1, dst.byteSize()), 64).asSlice(0, dst.byteSize());
            lockWithin(in.lock, deadline, op, from, tag);
            try {
                recv = in.post(tag, target, combiner);
            } catch (CommException e) {
                throw new CommException(where(op, from, tag) + ": " + e.getMessage(), e);
            } finally {
                in.lock.unlock();
            }
        }
        boolean sending = false, sent = out == null;
        try {
            Backoff backoff = new Backoff(oversubscribed);
            long idleSince = System.nanoTime();
            while (true) {
                long moved = 0, pushed = 0;
                if (!sent && !sending && out.lock.tryLock()) {
                    sending = true;
                    out.begin(tag, src);
                }
                if (sending && !out.done()) moved = pushed = out.push(STEP_BYTES);
                if (sending && out.done()) {
                    // Let the next sender in as soon as our bytes are in the ring: holding the ring while we wait
                    // for our receive would deadlock two threads that exchange on different tags in opposite order.
                    out.lock.unlock();
                    sending = false;
                    sent = true;
                }
                // Drain our inbound ring only while our receive is pending: draining further would pull the peer's
                // next message into a buffer of our own before its receive is posted (an allocation and a copy).
                boolean recvPending = recv != null && recv.state < InboundPipe.DONE;
                if (recvPending && in.lock.tryLock()) {
                    try {
                        moved += in.progress(STEP_BYTES, recv);
                    } finally {
                        in.lock.unlock();
                    }
                }
                boolean sendDone = sent;
                if (!sendDone && pushed == 0 && back.lock.tryLock()) {
                    try {
                        moved += back.progress(STEP_BYTES, null);
                    } finally {
                        back.lock.unlock();
                    }
                }
                boolean recvDone = recv == null || recv.state == InboundPipe.DONE;
                if (sendDone && recvDone) break;
                if (recv != null && recv.state == InboundPipe.FAILED) {
                    throw new CommException(where(op, from, tag) + ": " + recv.error.getMessage(), recv.error);
                }
                long now = moved > 0 ? 0 : System.nanoTime();
                if (moved == 0 && now - idleSince > DRAIN_OTHERS_AFTER_NANOS) moved = drainOthers(in);
                if (moved > 0) {
                    backoff.reset();
                    idleSince = System.nanoTime();
                    continue;
                }
                checkPeers(sending && !sendDone ? out : null, recvDone ? null : in, now, op, tag);
                if (closed) throw new CommException(where(op, peerForErrors, tag) + ": transport was closed while waiting");
                if (now - deadline > 0) {
                    StringJoiner state = new StringJoiner("; ", " [", "]");
                    if (out != null) state.add(sent ? "send to rank " + to + " complete" : sending ? out.describe()
                            : "waiting for another thread's send to rank " + to);
                    if (in != null) state.add(in.describe());
                    if (back != null && back != in) state.add(back.describe());
                    throw new CommTimeoutException(where(op, sendDone ? from : to, tag) + ": no progress within " + timeoutMs
                            + " ms (" + (sendDone ? "receive" : "send") + " incomplete); the peer is hung, slow, or skipped"
                            + " this operation" + state + throttleNote());
                }
                backoff.idle();
            }
            if (target != dst && target != null) dst.copyFrom(target);
        } catch (RuntimeException e) {
            // Half a message in the ring can not be taken back: break the link so the receiver fails, not hangs.
            if (sending && out.started() && !out.done()) out.abort(e instanceof CommException ce ? ce : new CommException(e.toString(), e));
            if (recv != null && recv.state != InboundPipe.DONE) {
                in.lock.lock();
                try {
                    in.cancel(recv);
                } finally {
                    in.lock.unlock();
                }
            }
            throw e;
        } finally {
            if (sending) out.lock.unlock();
        }
    }

    /**
     * Drains the inbound rings other than the one this call receives on: a peer blocked sending to us may be what our
     * own peer is waiting for (a cycle of blocking sends over three or more ranks). Messages whose receive is
     * posted go straight to it; others are buffered within the budget.
     */
    private long drainOthers(InboundPipe mine) {
        long moved = 0;
        for (InboundPipe p : inbound) {
            if (p == null || p == mine || !p.lock.tryLock()) continue;
            try {
                moved += p.progress(STEP_BYTES, null);
            } finally {
                p.lock.unlock();
            }
        }
        return moved;
    }

    /** Why this rank may itself be the one not reading: a ring left unread because its message exceeds the budget. */
    private String throttleNote() {
        for (InboundPipe p : inbound) {
            if (p != null && p.throttledBytes() > 0) return "; rank " + rank + " does not read rank " + p.peer + " further: " + p.describe();
        }
        return "";
    }

    private void checkPeers(OutboundPipe pendingOut, InboundPipe pendingIn, long now, String op, int tag) {
        if (pendingOut != null) {
            String why = pendingOut.peerGone(now);
            if (why != null) {
                // A peer that closed its transport usually failed because of a third rank that died; if the rank we
                // receive from is that one, name it: it is the root cause, the closed peer only a consequence.
                if (why.equals(PeerLiveness.CLOSED) && pendingIn != null && pendingIn.peer != pendingOut.peer && pendingIn.lock.tryLock()) {
                    try {
                        String inWhy = pendingIn.peerGone(now, true);
                        if (inWhy != null && !inWhy.equals(PeerLiveness.CLOSED)) {
                            CommException gone = new CommException("peer rank " + pendingIn.peer + " " + inWhy + " (and peer rank "
                                    + pendingOut.peer + " " + why + ", probably because of it); check rank " + pendingIn.peer + "'s log");
                            pendingIn.fail(gone);
                            throw new CommException(where(op, pendingIn.peer, tag) + ": " + gone.getMessage(), gone);
                        }
                    } finally {
                        pendingIn.lock.unlock();
                    }
                }
                throw new CommException(where(op, pendingOut.peer, tag) + ": peer rank " + pendingOut.peer + " " + why
                        + "; check that rank's log");
            }
        }
        if (pendingIn != null && pendingIn.lock.tryLock()) {
            try {
                String why = pendingIn.peerGone(now);
                if (why != null) {
                    CommException gone = new CommException("peer rank " + pendingIn.peer + " " + why + "; check that rank's log");
                    pendingIn.fail(gone);
                    throw new CommException(where(op, pendingIn.peer, tag) + ": " + gone.getMessage(), gone);
                }
            } finally {
                pendingIn.lock.unlock();
            }
        }
    }

    private void lockWithin(ReentrantLock lock, long deadline, String op, int peer, int tag) {
        try {
            while (!lock.tryLock(1, TimeUnit.MILLISECONDS)) {
                if (closed) throw new CommException(where(op, peer, tag) + ": transport was closed while waiting");
                if (System.nanoTime() - deadline > 0) {
                    throw new CommTimeoutException(where(op, peer, tag) + ": another call on this link did not finish within " + timeoutMs + " ms");
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException(where(op, peer, tag) + ": interrupted", e);
        }
    }

    @Override
    public LinkKind linkKind(int peer) {
        if (peer < 0 || peer >= size) throw new IllegalArgumentException("peer out of range: peer=" + peer + " size=" + size);
        if (peer == rank) return LinkKind.SELF;
        return inbound[peer] != null ? LinkKind.SHM : LinkKind.NONE;
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        self.close();
        for (InboundPipe p : inbound) if (p != null) p.markClosed();
        for (OutboundPipe p : outbound) if (p != null) p.markClosed();
        // Unmap only once no call is inside a ring (they notice 'closed' within one backoff step).
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (active.get() > 0 && System.nanoTime() - until < 0) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        if (active.get() == 0) {
            // Messages buffered for receives that will never come: their memory is not the collector's to free. A
            // pipe still locked by a straggler keeps its buffers until process exit, like the mapping below.
            for (InboundPipe p : inbound) {
                if (p == null || !p.lock.tryLock()) continue;
                try {
                    p.freeBuffered();
                } finally {
                    p.lock.unlock();
                }
            }
            try {
                arena.close();
            } catch (IllegalStateException ignored) {
                // a straggler still inside: leave the mapping to process exit (the files are already unlinked)
            }
        }
    }
}
