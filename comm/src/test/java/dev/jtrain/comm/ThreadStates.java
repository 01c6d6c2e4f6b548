package dev.jtrain.comm;

import java.util.concurrent.TimeUnit;

/**
 * Test helper: waits until another thread is blocked inside the call under test, where a sleep would only make that
 * likely (on a loaded machine the thread may not even have reached the call when the sleep ends).
 */
public final class ThreadStates {
    private static final long DEADLINE_SECONDS = 10;

    private ThreadStates() {}

    /**
     * Returns once {@code thread} is parked (WAITING or TIMED_WAITING) with a call of {@code method} of a class in
     * {@code packagePrefix} on its stack, i.e. the call has started and waits. Fails when the thread ends first or
     * after 10 s. A waiting call that spins before it parks is caught in its parked phase.
     */
    public static void awaitParkedIn(Thread thread, String packagePrefix, String method) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        while (true) {
            // state, stack, state: the thread was parked both before and after the stack showed it in the call
            if (parked(thread) && inCall(thread, packagePrefix, method) && parked(thread)) return;
            Thread.State s = thread.getState();
            if (s == Thread.State.TERMINATED) throw new AssertionError(thread + " ended before it blocked in " + method);
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(thread + " did not block in " + method + " within " + DEADLINE_SECONDS + " s (state " + s + ")");
            }
            try {
                Thread.sleep(1); // a poll interval, leaving the core to the thread we wait for
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + thread + " to block in " + method, e);
            }
        }
    }

    private static boolean parked(Thread thread) {
        Thread.State s = thread.getState();
        return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
    }

    private static boolean inCall(Thread thread, String packagePrefix, String method) {
        for (StackTraceElement f : thread.getStackTrace()) {
            if (f.getMethodName().equals(method) && f.getClassName().startsWith(packagePrefix)) return true;
        }
        return false;
    }
}
