package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.transport.WaitHint;

import java.util.concurrent.locks.LockSupport;

/**
 * Idle strategy for shared-memory waits, in three phases bounded by time, not by count (Agrona's
 * BackoffIdleStrategy, with the phase lengths chosen per host load):
 * <ol>
 *   <li><b>spin</b> ({@code onSpinWait}): a peer on another core answers within a microsecond or two, and any
 *       sleep costs tens of microseconds on a VM, so a 4 KiB all-reduce is only fast if we are still looking at the
 *       ring when the bytes land. The budget depends on who waits ({@link WaitHint}):
 *       a caller blocked in a collective spins up to 1 ms (it has nothing else to do, as in MPI's blocking calls);
 *       a background communication thread 50 us (compute threads want the core); and with more ranks than cores
 *       on the host only 1 us, since the peer we wait for may be waiting for our core;</li>
 *   <li><b>yield</b>: hands the core to a runnable thread (the peer rank, a compute thread, the JIT) and comes back
 *       at once when nobody wants it — the oversubscribed case's fast path, as MPI's shared-memory BTL does;</li>
 *   <li><b>park</b> with growing sleeps (5 → 100 us; see {@link TimerSlack}) once a wait is clearly long (a peer
 *       still computing), so an idle communication thread stops taking CPU from training.</li>
 * </ol>
 * <p>Threading: one instance per waiting call; not shared.
 */
final class Backoff {
    /** Spin of a caller blocked in a collective (see {@link WaitHint}) on a host with a core per rank. */
    static final long BLOCKING_SPIN_NANOS = 1_000_000;
    /** Spin of a background communication thread, which shares the cores with compute threads. */
    static final long BACKGROUND_SPIN_NANOS = 50_000;
    static final long OVERSUBSCRIBED_SPIN_NANOS = 1_000;
    static final long YIELD_NANOS = 1_000_000;
    static final long MIN_PARK_NANOS = 5_000;
    static final long MAX_PARK_NANOS = 100_000;

    private final long spinNanos;
    private long start;
    private long parkNanos = MIN_PARK_NANOS;

    /** @param oversubscribed more ranks on this host than cores, so spinning steals the peer's core */
    Backoff(boolean oversubscribed) {
        this.spinNanos = oversubscribed ? Math.min(OVERSUBSCRIBED_SPIN_NANOS, BACKGROUND_SPIN_NANOS)
                : WaitHint.isBlockingCaller() ? BLOCKING_SPIN_NANOS : BACKGROUND_SPIN_NANOS;
    }

    void reset() {
        start = 0;
        parkNanos = MIN_PARK_NANOS;
    }

    void idle() {
        long now = System.nanoTime();
        if (start == 0) start = now;
        long waited = now - start;
        if (waited < spinNanos) {
            Thread.onSpinWait();
        } else if (waited < spinNanos + YIELD_NANOS) {
            Thread.yield();
        } else {
            if (parkNanos == MIN_PARK_NANOS) TimerSlack.minimiseForCurrentThread();
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(MAX_PARK_NANOS, parkNanos * 2);
        }
    }
}
