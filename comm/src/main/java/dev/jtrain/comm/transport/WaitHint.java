package dev.jtrain.comm.transport;

/**
 * Tells a transport how the current thread may wait: whether it is a caller blocked in a collective with nothing
 * else to do (so busy-polling for a long time costs nobody, the way MPI's blocking calls poll), or a background
 * communication thread running async work beside compute threads (so it must give the core away soon).
 *
 * <p>Why it matters: on a VM, once a waiter stops spinning, even a {@code sched_yield} adds tens of microseconds,
 * and two ranks that each see the other late stay in that slow rhythm; a blocked caller's longer spin keeps them
 * out of it (bench/MEASUREMENTS.md, "spin budget").
 *
 * <p>Threading: per thread; set around one call by the process group.
 */
public final class WaitHint {
    private static final ThreadLocal<Boolean> BLOCKING_CALLER = ThreadLocal.withInitial(() -> Boolean.FALSE);

    private WaitHint() { }

    /** Runs {@code call} on the current thread marked as a blocked caller. */
    public static void asBlockingCaller(Runnable call) {
        BLOCKING_CALLER.set(Boolean.TRUE);
        try {
            call.run();
        } finally {
            BLOCKING_CALLER.set(Boolean.FALSE);
        }
    }

    public static boolean isBlockingCaller() { return BLOCKING_CALLER.get(); }
}
