package dev.jtrain.cli;

import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * Turns the scheduler's SIGTERM (Slurm preemption or time limit with {@code --signal}, Kubernetes pod deletion,
 * {@code jtrain launch} stopping its ranks) into a request to checkpoint and stop at the next step, instead of the
 * JVM's default of exiting at once. Slurm follows up with SIGKILL after its KillWait, Kubernetes after the pod's
 * grace period: the save must fit in that time.
 */
final class PreemptionSignal {
    private PreemptionSignal() {}

    /** The JVM's own handler (run shutdown hooks, exit), while {@link #onTerm} replaces it. */
    private static SignalHandler jvmHandler;

    static synchronized void onTerm(Runnable action) {
        SignalHandler before = Signal.handle(new Signal("TERM"), sig -> {
            System.err.println("jtrain: SIGTERM received; stopping at the next step boundary (checkpointing first if --ckpt-dir is set)");
            action.run();
        });
        if (jvmHandler == null) jvmHandler = before;
    }

    /** SIGTERM exits the process again (a rank parked between attempts has no training to stop). */
    static synchronized void restore() {
        if (jvmHandler != null) Signal.handle(new Signal("TERM"), jvmHandler);
        jvmHandler = null;
    }
}
