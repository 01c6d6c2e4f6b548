package dev.jtrain.tensor.kernel;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The persistent worker pool every multithreaded kernel runs on (the counterpart of ATen's intra-op pool).
 *
 * <p>Workers are started once and wait spin-then-park between parallel regions, so a region costs a few
 * microseconds instead of a thread hand-off through an executor queue. The calling thread runs chunk 0
 * itself. Regions do not nest: a kernel called from inside a region runs serially on that worker.
 *
 * <p>Threading: {@link #forRange} may be called from any thread; concurrent callers are serialised, since
 * two regions sharing the same cores would only slow each other down.
 */
public final class Parallel {
    /** Body of a parallel loop over the half-open range [from, to). */
    @FunctionalInterface
    public interface RangeBody {
        void run(int from, int to);
    }

    private static final int SPIN_ITERATIONS = 20_000;
    private static volatile Parallel pool = new Parallel(defaultThreads());
    private static final ThreadLocal<Boolean> IN_REGION = ThreadLocal.withInitial(() -> false);

    private final int threads;
    private final Thread[] workers;
    private final AtomicInteger pending = new AtomicInteger();
    private volatile long generation;
    private volatile RangeBody body;
    private volatile int n;
    private volatile int chunks;
    private volatile Throwable failure;
    private volatile boolean shutdown;
    private volatile Thread caller;

    private Parallel(int threads) {
        this.threads = threads;
        this.workers = new Thread[threads - 1];
        for (int i = 0; i < workers.length; i++) {
            final int id = i + 1;
            Thread t = new Thread(() -> workerLoop(id), "jtrain-kernel-" + id);
            t.setDaemon(true);
            workers[i] = t;
            t.start();
        }
    }

    private static int defaultThreads() {
        int t = KernelOptions.CURRENT.threads();
        return t > 0 ? t : Runtime.getRuntime().availableProcessors();
    }

    /** Number of threads kernels use, including the caller. */
    public static int threads() {
        return pool.threads;
    }

    /**
     * Resizes the pool (like torch.set_num_threads). A region running on the old pool finishes on it first
     * (its monitor is taken before the old workers are stopped); callers that raced to the old pool move to
     * the new one.
     */
    public static synchronized void setThreads(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        if (threads == pool.threads) return;
        Parallel old = pool;
        pool = new Parallel(threads);
        synchronized (old) {
            old.shutdown = true;
            for (Thread w : old.workers) LockSupport.unpark(w);
        }
    }

    /**
     * Runs {@code body} over [0, n) split into at most {@link #threads()} contiguous chunks of at least
     * {@code grain} iterations. Returns when every chunk has finished; rethrows the first failure.
     */
    public static void forRange(int n, int grain, RangeBody body) {
        if (n <= 0) return;
        while (true) {
            Parallel p = pool;
            int chunks = Math.min(p.threads, Math.max(1, n / Math.max(1, grain)));
            if (chunks <= 1 || IN_REGION.get()) {
                body.run(0, n);
                return;
            }
            synchronized (p) {
                if (p.shutdown) continue;  // resized meanwhile: its workers are gone, use the new pool
                p.region(n, chunks, body);
                return;
            }
        }
    }

    private void region(int n, int chunks, RangeBody body) {
        this.body = body;
        this.n = n;
        this.chunks = chunks;
        this.failure = null;
        this.caller = Thread.currentThread();
        pending.set(chunks - 1);
        generation++;
        for (int i = 0; i < chunks - 1; i++) LockSupport.unpark(workers[i]);
        IN_REGION.set(true);
        try {
            runChunk(0);
        } finally {
            IN_REGION.set(false);
        }
        int spins = 0;
        while (pending.get() != 0) {
            if (++spins < SPIN_ITERATIONS) Thread.onSpinWait();
            else LockSupport.parkNanos(50_000);
        }
        this.body = null;
        Throwable f = failure;
        if (f instanceof RuntimeException re) throw re;
        if (f instanceof Error e) throw e;
        if (f != null) throw new IllegalStateException(f);
    }

    private void runChunk(int id) {
        int lo = (int) ((long) n * id / chunks);
        int hi = (int) ((long) n * (id + 1) / chunks);
        try {
            body.run(lo, hi);
        } catch (Throwable t) {
            if (failure == null) failure = t;
        }
    }

    private void workerLoop(int id) {
        IN_REGION.set(true);
        long seen = 0;
        while (!shutdown) {
            int spins = 0;
            while (generation == seen && !shutdown) {
                if (++spins < SPIN_ITERATIONS) Thread.onSpinWait();
                else LockSupport.park(this);
            }
            if (shutdown) return;
            seen = generation;
            if (id < chunks) {
                runChunk(id);
                if (pending.decrementAndGet() == 0) LockSupport.unpark(caller);
            }
        }
    }
}
