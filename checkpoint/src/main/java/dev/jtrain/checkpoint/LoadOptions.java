package dev.jtrain.checkpoint;

/**
 * How one load runs.
 *
 * @param broadcast one holder of each replicated tensor reads it and broadcasts it to the other ranks, instead of every
 *                  replica reading the same bytes (needs a process group; ignored in one process)
 * @param step      which checkpoint under the root directory: -1 = the one {@code latest} names
 */
public record LoadOptions(boolean broadcast, long step) {
    public static LoadOptions latest() {
        return new LoadOptions(false, -1);
    }

    public LoadOptions withBroadcast(boolean on) {
        return new LoadOptions(on, step);
    }

    public LoadOptions atStep(long s) {
        return new LoadOptions(broadcast, s);
    }
}
