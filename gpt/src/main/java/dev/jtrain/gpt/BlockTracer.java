package dev.jtrain.gpt;

/** Receives per-block forward and backward timings (for the Perfetto trace); called on the training thread. */
public interface BlockTracer {
    void forward(int block, long startNanos, long endNanos);

    void backwardBegin(int block);

    void backwardEnd(int block);
}
