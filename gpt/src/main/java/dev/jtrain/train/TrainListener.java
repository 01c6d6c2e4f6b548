package dev.jtrain.train;

/** Receives progress from the {@link Trainer}; the CLI renders a progress bar and writes JSONL from it. */
public interface TrainListener {
    default void onStep(StepMetrics m) {}

    default void onEval(EvalMetrics m) {}

    default void onCheckpoint(CheckpointMetrics m) {}

    /** A save to a best-effort tier (the nodes' memory) failed; training went on. */
    default void onCheckpointFailed(String tier, int step, String why) {}

    /** A save committed with something to report (removing older checkpoints failed). */
    default void onCheckpointNote(String tier, int step, String note) {}
}
