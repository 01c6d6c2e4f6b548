package dev.jtrain.comm.launch;

import java.util.function.Consumer;

/**
 * The launcher's request to stop one running attempt of a warmly restarted rank ({@link WarmRestart}): another
 * rank or node failed, so this attempt's collectives can not complete and must fail now rather than at their
 * timeouts. The attempt says how to stop ({@link #onAbort}, typically aborting its process group); a request that
 * came before that is delivered on registration.
 *
 * <p>Threading: fired from the thread that reads the launcher's messages, registered from the attempt's thread.
 */
public final class AbortSignal {
    private Consumer<String> action;
    private String reason;

    /** A signal nobody fires: for ranks that are not restarted warm. */
    public static AbortSignal none() { return new AbortSignal(); }

    /** Registers what stops this attempt, replacing an earlier registration; runs it at once if already fired. */
    public void onAbort(Consumer<String> stop) {
        String fired;
        synchronized (this) {
            action = stop;
            fired = reason;
        }
        if (fired != null) stop.accept(fired);
    }

    /** The reason given, when fired; null otherwise. */
    public synchronized String reason() { return reason; }

    void fire(String why) {
        Consumer<String> a;
        synchronized (this) {
            if (reason != null) return;
            reason = why;
            a = action;
        }
        if (a != null) a.accept(why);
    }
}
