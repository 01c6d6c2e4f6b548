package dev.jtrain.cli;

import sun.misc.Signal;

/**
 * Turns the scheduler's SIGTERM (Slurm preemption or time limit with {@code --signal}, Kubernetes pod deletion,
 * {@code jtrain launch} stopping its ranks) into a request to checkpoint and stop at the next step, instead of the
 * JVM's default of exiting at once. Slurm follows up with SIGKILL after its KillWait, Kubernetes after the pod's
 * grace period: the save must fit in that time.
 */
final class PreemptionSignal {
    private PreemptionSignal() {}

    static void onTerm(Runnable action) {
        Signal.handle(new Signal("TERM"), sig -> {
            System.err.println("jtrain: SIGTERM received; stopping at the next step boundary (checkpointing first if --ckpt-dir is set)");
            action.run();
        });
    }
}
