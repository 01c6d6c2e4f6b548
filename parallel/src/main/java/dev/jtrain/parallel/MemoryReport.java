package dev.jtrain.parallel;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.FlatOptimizer;

/**
 * Per-rank bytes of training state, to compare with the ZeRO paper's fp32 accounting (Rajbhandari et al. 2020,
 * per parameter: weights 4 B, gradients 4 B, Adam m and v 8 B): DDP 16 B; stage 1 4 + 4 + 8/N; stage 2 4 + (4 + 8)/N;
 * stage 3 16/N (plus, not counted here, the full parameters of the units gathered at the moment).
 * Transient staging buffers are reported separately (they do not grow with the model).
 */
public record MemoryReport(long parameters, long parameterBytes, long gradientBytes, long optimizerBytes, long stagingBytes) {
    /** What a replicated strategy (DDP, one process) holds: the flat weight and gradient buffers and the optimizer's state. */
    static MemoryReport replicated(FlatParameters params, FlatOptimizer optimizer) {
        long state = 0;
        for (float[] s : optimizer.state()) state += 4L * s.length;
        return new MemoryReport(params.parameterCount(), 4L * params.data().length, 4L * params.grad().length, state, 0);
    }

    public long totalBytes() {
        return parameterBytes + gradientBytes + optimizerBytes;
    }

    public double bytesPerParameter() {
        return (double) totalBytes() / parameters;
    }

    /** The paper's figure for this stage and world size. */
    public static double expectedBytesPerParameter(int stage, int world) {
        return switch (stage) {
            case 0 -> 16;
            case 1 -> 8 + 8.0 / world;
            case 2 -> 4 + 12.0 / world;
            case 3 -> 16.0 / world;
            default -> throw new IllegalArgumentException("ZeRO stage must be 0, 1, 2 or 3: " + stage);
        };
    }
}
