package dev.jtrain.comm.launch;

import java.util.function.Consumer;

/**
 * The launcher's request to stop one running attempt of a warmly restarted rank ({@link WarmRestart}), in one of two
 * ways:
 * <ul>
 *   <li><b>abort</b>: another rank or node failed, so this attempt's collectives can not complete and must fail now
 *       rather than at their timeouts. The attempt says how ({@link #onAbort}, typically aborting its process
 *       group).</li>
 *   <li><b>stop at a step boundary</b>: nothing failed, but the group is about to change (a node rejoins). Every rank
 *       can still finish its step, save it and end the attempt with {@link WarmRestart#STOPPED_FOR_REGROUP}, so the
 *       next attempt loses no step. The attempt says how ({@link #onStopRequest}); one that registers nothing is aborted when its
 *       launcher's patience ends.</li>
 * </ul>
 * A request that came before the registration is delivered on it.
 *
 * <p>Threading: fired from the thread that reads the launcher's messages, registered from the attempt's thread.
 */
public final class AbortSignal {
    private final Request abort = new Request(), stopAtStepBoundary = new Request();

    /** A signal nobody fires: for ranks that are not restarted warm. */
    public static AbortSignal none() { return new AbortSignal(); }

    /** Registers what stops this attempt, replacing an earlier registration; runs it at once if already fired. */
    public void onAbort(Consumer<String> stop) { abort.register(stop); }

    /** Registers how this attempt stops at its next step boundary; runs it at once if that was asked already. */
    public void onStopRequest(Consumer<String> stop) { stopAtStepBoundary.register(stop); }

    /** The reason given for an abort, when fired; null otherwise. */
    public String reason() { return abort.reason(); }

    void fire(String why) { abort.fire(why); }

    void requestStop(String why) { stopAtStepBoundary.fire(why); }

    /** One kind of request: made at most once, delivered to the action registered last, or on its registration. */
    private static final class Request {
        private Consumer<String> action;
        private String reason;

        void register(Consumer<String> a) {
            String fired;
            synchronized (this) {
                action = a;
                fired = reason;
            }
            if (fired != null) a.accept(fired);
        }

        synchronized String reason() { return reason; }

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
}
