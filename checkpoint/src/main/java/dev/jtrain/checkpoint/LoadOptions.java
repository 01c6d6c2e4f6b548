package dev.jtrain.checkpoint;

/**
 * How one load runs.
 *
 * @param broadcast one holder of each replicated tensor reads it and broadcasts it to the other ranks, instead of every
 *                  replica reading the same bytes (needs a process group; ignored in one process)
 * @param step      which checkpoint under the root directory: -1 = the one {@code latest} names
 * @param fallback  with {@code step} -1: the newest committed checkpoint that loads and verifies, skipping newer ones
 *                  that are corrupt or partial (each skip is reported in {@link LoadReport#skipped}; nothing is deleted)
 * @param minStep   with {@code fallback}: no older step than this is tried (another tier holds a newer one); -1 = any
 */
public record LoadOptions(boolean broadcast, long step, boolean fallback, long minStep) {
    public LoadOptions(boolean broadcast, long step, boolean fallback) {
        this(broadcast, step, fallback, -1);
    }

    /** The checkpoint the {@code latest} pointer names; a corrupt one fails the load. */
    public static LoadOptions latest() {
        return new LoadOptions(false, -1, false);
    }

    /** The newest committed checkpoint that verifies: what a resume after a crash wants. */
    public static LoadOptions newestValid() {
        return new LoadOptions(false, -1, true);
    }

    public LoadOptions withBroadcast(boolean on) {
        return new LoadOptions(on, step, fallback, minStep);
    }

    public LoadOptions atStep(long s) {
        return new LoadOptions(broadcast, s, fallback, minStep);
    }

    /** With {@code fallback}: stop before steps older than {@code s}. */
    public LoadOptions atLeast(long s) {
        return new LoadOptions(broadcast, step, fallback, s);
    }
}
