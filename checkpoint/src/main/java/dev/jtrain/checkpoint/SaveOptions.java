package dev.jtrain.checkpoint;

/**
 * How one save runs.
 *
 * @param step     training step the checkpoint belongs to; names the directory {@code step-000123}
 * @param async    return once the state is copied into staging; write, fsync and commit in the background
 * @param keepLast committed checkpoints to keep after this one commits (older ones are deleted); 0 = keep all.
 *                 The newest committed checkpoint is never deleted.
 */
public record SaveOptions(long step, boolean async, int keepLast) {
    public SaveOptions {
        if (step < 0) throw new IllegalArgumentException("step must be >= 0: step=" + step);
        if (keepLast < 0) throw new IllegalArgumentException("keepLast must be >= 0 (0 = keep all): keepLast=" + keepLast);
    }

    /** Synchronous, keep everything. */
    public static SaveOptions at(long step) {
        return new SaveOptions(step, false, 0);
    }

    public SaveOptions withAsync(boolean on) {
        return new SaveOptions(step, on, keepLast);
    }

    public SaveOptions withKeepLast(int k) {
        return new SaveOptions(step, async, k);
    }
}
