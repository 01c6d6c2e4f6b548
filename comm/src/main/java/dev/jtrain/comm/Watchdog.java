package dev.jtrain.comm;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * One daemon timer per JVM that fails operations still running after their timeout (the backstop of NCCL's
 * watchdog): even if a transport call blocks forever, the caller's {@link Work} fails within the timeout.
 *
 * <p>Collectives are checked by a periodic sweep over the registered groups ({@link #TICK_MS}), which costs a
 * running collective two volatile writes instead of a timer insertion and removal — a wake-up of this thread per
 * call would steal a core from the ranks on small machines. Point-to-point operations, which may be many at once,
 * get one timer each ({@link #schedule}).
 */
final class Watchdog {
    static final long TICK_MS = 20;
    private static final Logger LOG = LoggerFactory.getLogger(Watchdog.class);

    /** Something with deadlines to check; called from the watchdog thread. */
    interface Watched {
        void checkDeadline(long nowNanos);
    }

    private static final ScheduledThreadPoolExecutor TIMER = create();
    private static final Set<Watched> WATCHED = Collections.newSetFromMap(new WeakHashMap<>());

    static {
        TIMER.scheduleWithFixedDelay(Watchdog::sweep, TICK_MS, TICK_MS, TimeUnit.MILLISECONDS);
    }

    private Watchdog() {}

    static ScheduledFuture<?> schedule(Runnable onTimeout, long timeoutMs) {
        return TIMER.schedule(onTimeout, timeoutMs, TimeUnit.MILLISECONDS);
    }

    /** Checks {@code w} every tick until {@link #unwatch} (held weakly: a forgotten group does not leak). */
    static void watch(Watched w) {
        synchronized (WATCHED) {
            WATCHED.add(w);
        }
    }

    static void unwatch(Watched w) {
        synchronized (WATCHED) {
            WATCHED.remove(w);
        }
    }

    private static void sweep() {
        List<Watched> now;
        synchronized (WATCHED) {
            now = new ArrayList<>(WATCHED);
        }
        long t = System.nanoTime();
        for (Watched w : now) {
            try {
                w.checkDeadline(t);
            } catch (RuntimeException e) {
                // one broken group must not stop the sweep for the others, but its operations are then not timed
                // out by us: say so, since a hang may follow
                LOG.error("comm watchdog: the deadline check of {} failed; its operations may not time out", w, e);
            }
        }
    }

    private static ScheduledThreadPoolExecutor create() {
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "jtrain-comm-watchdog");
            th.setDaemon(true);
            return th;
        });
        t.setRemoveOnCancelPolicy(true);
        return t;
    }
}
