package dev.jtrain.train;

/**
 * Per-step measurements, written as one JSON line each.
 *
 * @param stepMs    wall time of the whole optimizer step
 * @param computeMs forward + backward
 * @param commMs    time waiting on collectives that did not overlap compute (0 in one process)
 * @param optimMs   clipping + optimizer update
 * @param dataMs    batch fetching
 * @param mfu       model FLOPs utilisation, fraction of peak
 * @param savedActivationBytes peak bytes of activations held for backward during this step
 * @param peakHeapBytes        sum of each JVM heap pool's peak use since start (an upper bound of this rank's peak)
 */
public record StepMetrics(int step, float loss, float lr, float gradNorm, double tokensPerSecond, double mfu,
                          double stepMs, double computeMs, double commMs, double optimMs, double dataMs,
                          long savedActivationBytes, long peakHeapBytes, double elapsedSeconds) {}
