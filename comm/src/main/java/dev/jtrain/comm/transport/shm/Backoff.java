package dev.jtrain.comm.transport.shm;

import java.util.concurrent.locks.LockSupport;

/**
 * Idle strategy for shared-memory waits (Agrona's BackoffIdleStrategy): spin a little for latency, then yield,
 * then park with growing sleeps (capped at 100 us: a ring refills within microseconds, longer sleeps cost bandwidth) so that oversubscribed ranks (4 ranks on 2 cores) hand the CPU to the peer they
 * are waiting for instead of burning it.
 *
 * <p>Threading: one instance per waiting call; not shared.
 */
final class Backoff {
    static final int SPINS = 400;
    static final int YIELDS = 40;
    static final long MIN_PARK_NANOS = 5_000;
    static final long MAX_PARK_NANOS = 100_000;

    private int idles;
    private long parkNanos = MIN_PARK_NANOS;

    void reset() {
        idles = 0;
        parkNanos = MIN_PARK_NANOS;
    }

    void idle() {
        if (idles < SPINS) {
            idles++;
            Thread.onSpinWait();
        } else if (idles < SPINS + YIELDS) {
            idles++;
            Thread.yield();
        } else {
            if (parkNanos == MIN_PARK_NANOS) TimerSlack.minimiseForCurrentThread();
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(MAX_PARK_NANOS, parkNanos * 2);
        }
    }
}
