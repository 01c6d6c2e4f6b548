package dev.jtrain.checkpoint;

/**
 * How one save runs.
 *
 * @param step            training step the checkpoint belongs to; names the directory {@code step-000123}
 * @param async           return once the state is copied into staging; write, fsync and commit in the background
 * @param keepLast        committed checkpoints to keep after this one commits (older ones are deleted); 0 = keep all.
 *                        The newest committed checkpoint is never deleted.
 * @param overlapSnapshot with {@code async}: return before the copy into staging too; a background copier makes the
 *                        copy (and the writer writes right behind it) while training runs its next forward and backward, which only read the state. The
 *                        caller must call {@link Checkpointer#awaitSnapshot()} before it changes any saved tensor
 *                        (before the optimizer step). PyTorch 2.x offers the same contract as asynchronous staging.
 */
public record SaveOptions(long step, boolean async, int keepLast, boolean overlapSnapshot) {
    public SaveOptions {
        if (step < 0) throw new IllegalArgumentException("step must be >= 0: step=" + step);
        if (keepLast < 0) throw new IllegalArgumentException("keepLast must be >= 0 (0 = keep all): keepLast=" + keepLast);
        if (overlapSnapshot && !async)
            throw new IllegalArgumentException("overlapSnapshot needs async: a synchronous save copies and writes before it returns");
    }

    public SaveOptions(long step, boolean async, int keepLast) {
        this(step, async, keepLast, false);
    }

    /** Synchronous, keep everything. */
    public static SaveOptions at(long step) {
        return new SaveOptions(step, false, 0);
    }

    public SaveOptions withAsync(boolean on) {
        return new SaveOptions(step, on, keepLast, overlapSnapshot && on);
    }

    public SaveOptions withKeepLast(int k) {
        return new SaveOptions(step, async, k, overlapSnapshot);
    }

    /** Async, with the snapshot copy overlapped too (see {@code overlapSnapshot}). */
    public SaveOptions withOverlapSnapshot(boolean on) {
        return new SaveOptions(step, async || on, keepLast, on);
    }
}
