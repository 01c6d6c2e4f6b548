package dev.jtrain.comm;

import dev.jtrain.comm.algo.CollectiveContext;
import dev.jtrain.comm.algo.RingAllGather;
import dev.jtrain.comm.algo.ScratchPool;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.WaitHint;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;

/**
 * The execution side of one process group: a single communication thread that runs collectives in issue order,
 * the watchdog of each operation, the debug checks, and the "broken" state — after a collective fails half-way
 * the ranks are out of step, so every later operation of this group fails fast (as NCCL aborts a communicator).
 *
 * <p>Threading: {@link #submit} from any thread; everything else runs on the communication thread, except
 * {@link #runOn}, used for point-to-point operations on their own threads.
 */
final class GroupEngine implements AutoCloseable, Watchdog.Watched {
    /** One operation's body; throws CommException on failure. */
    interface Body {
        void run();
    }

    private final Transport transport;
    private final int tagBase;
    private final long timeoutMs;
    private volatile long chunkBytes;
    private final boolean debug;
    private final String groupLabel;
    private final ScratchPool scratch = new ScratchPool();
    private final ScratchPool debugScratch = new ScratchPool();
    private final ThreadPoolExecutor executor;
    private volatile Thread thread;
    private volatile CollectiveContext current;
    private volatile CommException broken;
    private volatile boolean closed;
    /** Collectives issued and not finished; the inline fast path needs it to be zero (ordering). */
    private final AtomicInteger outstanding = new AtomicInteger();
    /** Held by whichever thread runs a collective: the communication thread, or a caller on the inline path. */
    private final ReentrantLock runLock = new ReentrantLock();
    /** The collective now running and its deadline, for the watchdog's sweep. */
    private volatile CommWork running;
    private volatile long runningDeadlineNanos;

    GroupEngine(Transport transport, int tagBase, long timeoutMs, long chunkBytes, boolean debug, String groupLabel) {
        this.transport = transport;
        this.tagBase = tagBase;
        this.timeoutMs = timeoutMs;
        this.chunkBytes = chunkBytes;
        this.debug = debug;
        this.groupLabel = groupLabel;
        this.executor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "jtrain-comm-" + groupLabel);
            t.setDaemon(true);
            thread = t;
            return t;
        });
        executor.prestartCoreThread();
        Watchdog.watch(this);
    }

    @Override
    public void checkDeadline(long nowNanos) {
        CommWork w = running;
        if (w != null && nowNanos - runningDeadlineNanos > 0 && !w.isCompleted()) onTimeout(w, true);
    }

    Thread thread() { return thread; }

    /** Set once at group start, before the first collective (rank 0's choice, see ProcessGroupOptions#chunkBytes). */
    void chunkBytes(long bytes) { this.chunkBytes = bytes; }

    /** Which ranks of the group share a host; set once at group start, before the first collective. */
    void topology(HostTopology t) { this.topology = t; }

    private volatile HostTopology topology;

    /** A context for the current operation; remembered so a failure can name the last peer. */
    CollectiveContext context(DType dtype, ReduceOp op) {
        CollectiveContext c = new CollectiveContext(transport, tagBase, dtype, op, scratch, chunkBytes, topology);
        current = c;
        return c;
    }

    ScratchPool scratch() { return scratch; }

    /** Queues a collective; it runs after every collective issued before it on this rank. */
    CommWork submit(OpDescriptor d, String description, BufferGuard guard, Body body) {
        CommWork w = new CommWork(description, thread);
        if (closed) {
            w.fail(new CommException(description + ": process group " + groupLabel + " is closed"));
            return w;
        }
        outstanding.incrementAndGet();
        try {
            executor.execute(new Task(w, d, guard, body));
        } catch (RejectedExecutionException e) {
            outstanding.decrementAndGet();
            w.fail(new CommException(description + ": process group " + groupLabel + " is closed"));
        }
        return w;
    }

    /**
     * Runs a collective on the calling thread if nothing issued earlier is still queued or running (so issue order
     * is kept); returns null otherwise, and the caller queues it. Used by the blocking forms.
     *
     * <p>Only while the transport's own per-call deadline is no later than the group's: the watchdog fails a late
     * Work, but it can not unblock a caller waiting inside the transport. With a group timeout shorter than the
     * transport's ({@code JTRAIN_COMM_TIMEOUT_MS} below {@code JTRAIN_TIMEOUT_MS}) an inline call to a peer on a
     * cut-off host waited out the transport's 300 s instead of the group's timeout; queued, its caller waits on the
     * Work, which the watchdog fails on time.
     */
    CommWork runInlineIfIdle(OpDescriptor d, String description, BufferGuard guard, Body body) {
        return timeoutMs >= transport.timeoutMs() ? runInlineNow(d, description, guard, body) : null;
    }

    /** {@link #runInlineIfIdle} whatever the timeouts: for calls that can only run on the caller. */
    private CommWork runInlineNow(OpDescriptor d, String description, BufferGuard guard, Body body) {
        if (closed || outstanding.get() != 0 || !runLock.tryLock()) return null;
        try {
            if (outstanding.get() != 0) return null;
            outstanding.incrementAndGet();
            try {
                CommWork w = new CommWork(description, thread);
                WaitHint.asBlockingCaller(() -> execute(w, d, guard, body, true));
                return w;
            } finally {
                outstanding.decrementAndGet();
            }
        } finally {
            runLock.unlock();
        }
    }

    /**
     * Runs a collective on the calling thread once everything issued earlier has finished: for blocking calls on
     * buffers only the caller may touch (confined arenas), which the communication thread could not access. Issue
     * order is kept because the call starts only after its predecessors.
     */
    CommWork runInlineWhenIdle(OpDescriptor d, String description, BufferGuard guard, Body body) {
        if (Thread.currentThread() == thread) {
            // Called from a completion callback: the work it would wait for is this very thread's.
            return failed(description, new CommException(description + ": a blocking collective on a confined buffer was called"
                    + " from the group's communication thread (a Work callback); it would wait for itself. Call it from"
                    + " another thread, or use a shared/heap buffer"));
        }
        long idle = 0, deadline = System.nanoTime() + 2 * TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            if (closed) return submit(d, description, guard, body); // fails at once, naming the closed group
            CommWork w = runInlineNow(d, description, guard, body); // bounded by the transport's timeout alone
            if (w != null) return w;
            if (System.nanoTime() - deadline > 0) { // predecessors should have failed by their own timeouts long ago
                return failed(description, new CommTimeoutException(description + ": earlier collectives of group " + groupLabel
                        + " were still running after " + 2 * timeoutMs + " ms, so this blocking call on a confined buffer"
                        + " never got to run on the caller"));
            }
            // Predecessors still run (each bounded by its own timeout): spin briefly, then sleep in short steps.
            if (++idle < 1_000) Thread.onSpinWait();
            else LockSupport.parkNanos(20_000);
        }
    }

    private CommWork failed(String description, CommException cause) {
        CommWork w = new CommWork(description, thread);
        boolean ignored = w.fail(cause);
        return w;
    }

    /** Runs a point-to-point operation on the calling thread with the same watchdog and error wrapping. */
    void runOn(CommWork w, Body body) { execute(w, null, BufferGuard.NONE, body, false); }

    private void execute(CommWork w, OpDescriptor d, BufferGuard guard, Body body, boolean collective) {
        if (w.isCompleted()) return;
        CommException b = broken;
        if (collective && b != null) {
            w.fail(new CommException(w.description() + ": not run, process group " + groupLabel
                    + " is unusable since an earlier operation failed: " + b.getMessage()
                    + " — destroy the group and create a new one"));
            return;
        }
        current = null;
        ScheduledFuture<?> dog = null;
        if (collective) {
            runningDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            running = w;
        } else {
            dog = Watchdog.schedule(() -> onTimeout(w, false), timeoutMs);
        }
        try {
            String complaint = guard.checkAtStart();
            if (debug && collective) verifyFingerprints(d, w.description());
            body.run();
            if (complaint == null) complaint = guard.checkAtEnd();
            disarm(dog, collective);
            if (complaint != null) {
                w.fail(new BufferModifiedException(w.description() + ": " + complaint + "; the caller must not touch a "
                        + "buffer until its Work completes (JTRAIN_DEBUG=DETAIL check)"));
            } else {
                synchronized (w) { // against onTimeout
                    w.succeed();
                }
            }
        } catch (CollectiveMismatchException e) {
            disarm(dog, collective);
            w.fail(e); // every rank detected it at the same point: the group is still in step
        } catch (RuntimeException | Error e) {
            // An Error too (a missing class, out of memory): left uncaught it would kill the thread and leave the
            // Work pending until the timeout, a silent multi-minute hang.
            disarm(dog, collective);
            CommException wrapped = wrap(w.description(), e, collective);
            // mark the group broken before completing the Work, so a waiter that issues more work sees it
            if (collective && broken == null && !w.isCompleted()) broken = wrapped;
            w.fail(wrapped);
        }
    }

    private void disarm(ScheduledFuture<?> dog, boolean collective) {
        if (collective) running = null;
        else dog.cancel(false);
    }

    /** Names a peer's host in failure messages once the group knows its topology (a peer on another host is the
     *  first thing to check when a collective across hosts stalls). */
    private volatile IntFunction<String> peerHost = p -> null;

    void peerHosts(IntFunction<String> hostOfPeer) { peerHost = hostOfPeer; }

    /** A sub-group's rank's rank in the world group (identity for the world group), for failure messages. */
    private volatile IntUnaryOperator worldRankOf = IntUnaryOperator.identity();

    void worldRanks(IntUnaryOperator groupToWorld) { worldRankOf = groupToWorld; }

    private String peerName(int peer) {
        String h = peerHost.apply(peer);
        int world = worldRankOf.applyAsInt(peer);
        return "peer rank " + peer + (world == peer ? "" : " (world rank " + world + ")") + (h == null ? "" : " on host " + h);
    }

    /** Who the collective's last transfer was with: the peer received from, and in an exchange the one sent to. */
    private String lastPeers(CollectiveContext c) {
        if (c == null || c.lastPeer() < 0) return null;
        int to = c.lastSendPeer();
        return to < 0 ? peerName(c.lastPeer()) : peerName(to) + " (sending) or " + peerName(c.lastPeer()) + " (receiving)";
    }

    private void onTimeout(CommWork w, boolean collective) {
        String peers = lastPeers(collective ? current : null);
        CommTimeoutException e = new CommTimeoutException(w.description() + ": did not complete within timeoutMs="
                + timeoutMs + (peers == null ? "" : " (waiting on " + peers + ")") + "; a rank is hung, died, or did not issue this operation");
        synchronized (w) { // atomic with the operation's own completion: a collective that finished first stays a success
            if (w.isCompleted()) return;
            if (collective && broken == null) broken = e;
            w.fail(e);
        }
        if (collective) failQueued(e);
    }

    /**
     * Fails the collectives queued behind a failed one now: they could only run once the communication thread is free,
     * which is when the stuck transport call returns (its own timeout, possibly much longer than the group's). Their
     * tasks stay queued and return at once when they come up (their Work is completed).
     */
    private void failQueued(CommException why) {
        for (Runnable r : executor.getQueue().toArray(new Runnable[0]))
            if (r instanceof Task t)
                t.work.fail(new CommException(t.work.description() + ": not run, process group " + groupLabel
                        + " is unusable since an earlier operation failed: " + why.getMessage() + " — destroy the group and create a new one", why));
    }

    private CommException wrap(String description, Throwable e, boolean collective) {
        String peers = lastPeers(collective ? current : null);
        String peer = peers == null ? "" : " with " + peers;
        CommException why = aborted;
        if (why != null) return new CommException(description + " aborted: " + why.getMessage(), why);
        String msg = description + " failed" + peer + ": " + (e instanceof Error ? e.toString() : e.getMessage());
        if (e instanceof CommTimeoutException) return new CommTimeoutException(msg, e);
        if (closed) return new CommException(description + ": process group " + groupLabel + " was closed while it ran", e);
        return new CommException(msg, e);
    }

    /** All-gathers every rank's 32-byte fingerprint and fails on every rank if any differs from its own. */
    private void verifyFingerprints(OpDescriptor d, String description) {
        int p = transport.size(), r = transport.rank();
        CollectiveContext c = new CollectiveContext(transport, tagBase + TagSpace.DEBUG_CHANNEL_BASE, DType.INT32, null,
                debugScratch, chunkBytes);
        current = c;
        MemorySegment mine = debugScratch.get(2, OpDescriptor.FINGERPRINT_BYTES);
        MemorySegment all = debugScratch.get(3, (long) p * OpDescriptor.FINGERPRINT_BYTES);
        d.writeFingerprint(mine);
        RingAllGather.INSTANCE.allGather(c, mine, all);
        List<String> others = new ArrayList<>();
        for (int i = 0; i < p; i++) {
            if (i == r) continue;
            OpDescriptor o = OpDescriptor.readFingerprint(all.asSlice((long) i * OpDescriptor.FINGERPRINT_BYTES, OpDescriptor.FINGERPRINT_BYTES));
            if (!o.matches(d)) others.add("rank " + i + " called " + o);
        }
        if (!others.isEmpty()) {
            throw new CollectiveMismatchException(description + ": mismatched collectives in group " + groupLabel
                    + ": this rank (" + r + ") called " + d.withoutAlgorithm() + "; " + String.join("; ", others)
                    + ". Every rank must issue the same collectives in the same order with the same count, dtype, op and root");
        }
    }

    /**
     * Marks the group broken by {@code why} (a peer is known to be gone or hung) and fails the collective now running
     * with it: its caller learns at once instead of at the timeout, and every later collective fails fast.
     */
    void abort(CommException why) {
        aborted = why;
        if (broken == null) broken = why;
        CommWork w = running;
        if (w != null && !w.isCompleted()) w.fail(new CommException(w.description() + " aborted: " + why.getMessage(), why));
        failQueued(why);
    }

    /** Why the group was {@link #abort aborted}; the failures its closed transport then causes are reported as this. */
    private volatile CommException aborted;

    /** Fails queued operations, interrupts the running one (the transport must be closed by the owner). */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        Watchdog.unwatch(this);
        for (Runnable r : executor.shutdownNow()) {
            if (r instanceof Task t) outstanding.decrementAndGet();
            if (r instanceof Task t) t.work.fail(new CommException(t.work.description() + ": not run, process group "
                    + groupLabel + " was closed"));
        }
    }

    private final class Task implements Runnable {
        final CommWork work;
        final OpDescriptor d;
        final BufferGuard guard;
        final Body body;

        Task(CommWork work, OpDescriptor d, BufferGuard guard, Body body) {
            this.work = work;
            this.d = d;
            this.guard = guard;
            this.body = body;
        }

        @Override
        public void run() {
            runLock.lock();
            try {
                execute(work, d, guard, body, true);
            } finally {
                runLock.unlock();
                outstanding.decrementAndGet();
            }
        }
    }

    boolean isClosed() { return closed; }
}
