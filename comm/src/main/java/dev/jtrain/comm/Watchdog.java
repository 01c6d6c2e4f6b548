package dev.jtrain.comm;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * One daemon timer per JVM that fails operations still running after their timeout (the backstop of NCCL's
 * watchdog): even if a transport call blocks forever, the caller's {@link Work} fails within the timeout.
 */
final class Watchdog {
    private static final ScheduledThreadPoolExecutor TIMER = create();

    private Watchdog() {}

    static ScheduledFuture<?> schedule(Runnable onTimeout, long timeoutMs) {
        return TIMER.schedule(onTimeout, timeoutMs, TimeUnit.MILLISECONDS);
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
