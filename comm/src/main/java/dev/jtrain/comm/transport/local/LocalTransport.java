package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.Transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Ranks as threads of one JVM: each send copies the message into an in-memory mailbox of the ordered pair
 * (src, dst), keyed by tag, and the receiver takes it from there (the shape of Gloo's in-process test harness).
 *
 * <p>Because sends are buffered, {@link #send} never blocks and {@link #sendRecv} is simply send-then-recv, which
 * can not deadlock in a ring. Closing a rank wakes every thread waiting on a mailbox that rank is part of, so a
 * "killed" peer is reported as a {@link CommException} at once.
 *
 * <p>Threading: as {@link Transport}; all state is guarded by one lock per mailbox.
 */
public final class LocalTransport implements Transport {
    private final Group group;
    private final int rank;

    private LocalTransport(Group group, int rank) {
        this.group = group;
        this.rank = rank;
    }

    /** Creates {@code size} connected transports, element {@code r} being rank {@code r}. */
    public static LocalTransport[] createGroup(int size, long timeoutMs) {
        if (size < 1) throw new IllegalArgumentException("size must be >= 1: size=" + size);
        if (timeoutMs <= 0) throw new IllegalArgumentException("timeoutMs must be > 0: timeoutMs=" + timeoutMs);
        Group group = new Group(size, timeoutMs);
        LocalTransport[] out = new LocalTransport[size];
        for (int r = 0; r < size; r++) out[r] = new LocalTransport(group, r);
        return out;
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return group.size; }

    @Override public long timeoutMs() { return group.timeoutMs; }

    @Override
    public void send(int peer, int tag, MemorySegment src) {
        checkPeer(peer, "send", tag);
        if (group.closed[rank]) throw new CommException(where("send", peer, tag) + ": this transport is closed");
        if (group.closed[peer]) throw new CommException(where("send", peer, tag) + ": peer rank " + peer + " is closed (gone)");
        byte[] copy = src.toArray(ValueLayout.JAVA_BYTE);
        group.boxes[rank][peer].put(tag, copy);
    }

    @Override
    public void recv(int peer, int tag, MemorySegment dst) {
        byte[] msg = take(peer, tag, dst.byteSize(), "recv");
        MemorySegment.copy(MemorySegment.ofArray(msg), 0, dst, 0, msg.length);
    }

    /** Folds the delivered copy straight into {@code acc}: the in-process twin of the transports' fused receive. */
    @Override
    public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner combiner) {
        Combiner.requireWholeElements(acc, combiner);
        if (to >= 0) send(to, tag, src);
        byte[] msg = take(from, tag, acc.byteSize(), "sendRecvCombine");
        Combiner.deliverBuffered(MemorySegment.ofArray(msg), acc, combiner);
    }

    @Override public boolean combinesOnArrival(int to, int from) { return true; }

    private byte[] take(int peer, int tag, long expected, String op) {
        checkPeer(peer, op, tag);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(group.timeoutMs);
        byte[] msg = group.boxes[peer][rank].take(tag, deadline, this, peer);
        if (msg.length != expected) {
            throw new CommException(where(op, peer, tag) + ": length mismatch, expected " + expected
                    + " bytes but rank " + peer + " sent " + msg.length + "; the two ranks issued different operations");
        }
        return msg;
    }

    @Override
    public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
        send(to, tag, src);
        recv(from, tag, dst);
    }

    @Override
    public LinkKind linkKind(int peer) {
        checkPeer(peer, "linkKind", 0);
        return peer == rank ? LinkKind.SELF : LinkKind.LOCAL;
    }

    @Override
    public void close() {
        if (group.closed[rank]) return;
        group.closed[rank] = true;
        for (int p = 0; p < group.size; p++) {
            group.boxes[rank][p].wakeAll();
            group.boxes[p][rank].wakeAll();
        }
    }

    private void checkPeer(int peer, String op, int tag) {
        if (peer < 0 || peer >= group.size) {
            throw new IllegalArgumentException("peer out of range: rank=" + rank + " op=" + op + " peer=" + peer
                    + " tag=" + tag + " size=" + group.size);
        }
    }

    String where(String op, int peer, int tag) {
        return "local transport rank " + rank + " " + op + " peer=" + peer + " tag=" + tag;
    }

    private static final class Group {
        final int size;
        final long timeoutMs;
        final Mailbox[][] boxes; // [src][dst]
        final boolean[] closed;  // written under no lock; read after a wake-up under a mailbox lock (see Mailbox)

        Group(int size, long timeoutMs) {
            this.size = size;
            this.timeoutMs = timeoutMs;
            this.boxes = new Mailbox[size][size];
            for (int s = 0; s < size; s++) for (int d = 0; d < size; d++) boxes[s][d] = new Mailbox();
            this.closed = new boolean[size];
        }
    }

    /** Messages from one rank to another, FIFO per tag. */
    private static final class Mailbox {
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition changed = lock.newCondition();
        private final Map<Integer, ArrayDeque<byte[]>> byTag = new HashMap<>();

        void put(int tag, byte[] msg) {
            lock.lock();
            try {
                byTag.computeIfAbsent(tag, t -> new ArrayDeque<>()).addLast(msg);
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        byte[] take(int tag, long deadlineNanos, LocalTransport self, int peer) {
            lock.lock();
            try {
                while (true) {
                    ArrayDeque<byte[]> q = byTag.get(tag);
                    if (q != null && !q.isEmpty()) return q.pollFirst();
                    // 'closed' is a plain array; wakeAll() takes this lock after setting it, so reading it here
                    // under the lock after being signalled sees the write (lock acquire/release ordering).
                    if (self.group.closed[self.rank]) {
                        throw new CommException(self.where("recv", peer, tag) + ": this transport was closed while waiting");
                    }
                    if (self.group.closed[peer]) {
                        throw new CommException(self.where("recv", peer, tag) + ": peer rank " + peer
                                + " closed (gone) before sending; check that rank's log for its failure");
                    }
                    long left = deadlineNanos - System.nanoTime();
                    if (left <= 0) {
                        throw new CommTimeoutException(self.where("recv", peer, tag) + ": no message within "
                                + self.group.timeoutMs + " ms; peer rank " + peer + " is hung or skipped this operation");
                    }
                    changed.awaitNanos(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CommException(self.where("recv", peer, tag) + ": interrupted", e);
            } finally {
                lock.unlock();
            }
        }

        void wakeAll() {
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }
}
