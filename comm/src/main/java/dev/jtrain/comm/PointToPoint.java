package dev.jtrain.comm;

import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.WaitHint;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Tagged send/receive of a group. Each operation runs on its own virtual thread, so a receive waiting for a message
 * that a peer sends only after some collective can not block this group's collectives (and vice versa). Operations
 * with the same (direction, peer, tag) are chained so they reach the transport in issue order (MPI's non-overtaking
 * rule), as the transport requires for one (peer, tag) stream.
 */
final class PointToPoint {
    private final ProcessGroup group;
    private final GroupEngine engine;
    private final Transport transport;
    private final int groupId;
    private final ConcurrentHashMap<Long, CompletableFuture<Void>> tails = new ConcurrentHashMap<>();
    private final AtomicLong seq = new AtomicLong();
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("jtrain-p2p-", 0).factory());

    PointToPoint(ProcessGroup group, GroupEngine engine, Transport transport, int groupId) {
        this.group = group;
        this.engine = engine;
        this.transport = transport;
        this.groupId = groupId;
    }

    Work isend(MemorySegment src, int dst, int tag) { return send(src, dst, tag, false); }

    Work irecv(MemorySegment dst, int src, int tag) { return recv(dst, src, tag, false); }

    /**
     * Sends on the caller's thread when nothing earlier is queued for this (direction, peer, tag) stream: a hand-off
     * to a virtual thread and back costs two wake-ups, tens of microseconds on a VM, against about one for the
     * message itself over shared memory.
     */
    void sendBlocking(MemorySegment src, int dst, int tag) { send(src, dst, tag, true).waitFor(); }

    void recvBlocking(MemorySegment dst, int src, int tag) { recv(dst, src, tag, true).waitFor(); }

    private Work send(MemorySegment src, int dst, int tag, boolean inline) {
        checkPeer(dst);
        int wireTag = TagSpace.p2p(groupId, tag);
        CommWork w = new CommWork(group.who() + " send #" + seq.incrementAndGet() + " to rank " + dst + " (tag=" + tag
                + " bytes=" + src.byteSize() + ")", engine.thread());
        chain(key(0, dst, tag), w, inline, () -> transport.send(dst, wireTag, src));
        return w;
    }

    private Work recv(MemorySegment dst, int src, int tag, boolean inline) {
        checkPeer(src);
        int wireTag = TagSpace.p2p(groupId, tag);
        CommWork w = new CommWork(group.who() + " recv #" + seq.incrementAndGet() + " from rank " + src + " (tag=" + tag
                + " bytes=" + dst.byteSize() + ")", engine.thread());
        chain(key(1, src, tag), w, inline, () -> transport.recv(src, wireTag, dst));
        return w;
    }

    void close() { threads.shutdownNow(); }

    private void chain(long key, CommWork w, boolean inline, GroupEngine.Body body) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        CompletableFuture<Void> prev = tails.put(key, done);
        if (inline && prev == null) {
            try {
                WaitHint.asBlockingCaller(() -> engine.runOn(w, body));
            } finally {
                done.complete(null);
                tails.remove(key, done);
            }
            return;
        }
        Runnable run = () -> {
            try {
                engine.runOn(w, body);
            } finally {
                done.complete(null);
                tails.remove(key, done);
            }
        };
        Runnable start = () -> {
            try {
                threads.execute(run);
            } catch (RejectedExecutionException e) {
                w.fail(new CommException(w.description() + ": process group is closed"));
                done.complete(null);
            }
        };
        if (prev == null) start.run();
        else prev.whenComplete((v, e) -> start.run());
    }

    private static long key(int direction, int peer, int tag) { return ((long) direction << 62) | ((long) peer << 20) | tag; }

    private void checkPeer(int peer) {
        if (peer < 0 || peer >= transport.size()) {
            throw new IllegalArgumentException("peer out of range: peer=" + peer + " size=" + transport.size());
        }
    }
}
