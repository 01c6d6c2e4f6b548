package dev.jtrain.parallel;

import java.util.Locale;

/**
 * What one rank will hold, predicted before anything is allocated, for a data-parallel strategy:
 * <ul>
 *   <li>{@code build}: while the model is built and laid out. Stages 0-2 move the parameters into one flat buffer
 *       beside one for gradients (8 B/param, the per-parameter arrays being collected as they move); ZeRO-3 takes its
 *       shards from the parameters where they are and drops each unit's full parameters once its shard is taken
 *       (4 B/param, plus one unit's shard);</li>
 *   <li>{@code state}: weights, gradients and optimizer state by the ZeRO paper's fp32 accounting (Rajbhandari et
 *       al. 2020): 16 Ψ (DDP), 8 Ψ + 8 Ψ/N, 4 Ψ + 12 Ψ/N, 16 Ψ/N; ZeRO-2 with several micro-steps per optimizer step
 *       keeps every parameter's gradient until the last one reduce-scatters them (as ZeRO-1 does), so 8 Ψ + 12 Ψ/N;</li>
 *   <li>{@code gathered}: ZeRO-3's full parameters and gradients in use, two units (the one running and the one
 *       prefetched) plus the root, which stays gathered for the step;</li>
 *   <li>{@code activations}: the caller's estimate for one micro-batch (what backward keeps plus the step's
 *       transients); under ZeRO-2, which keeps no gradient buffer between steps, plus the gradient of the largest
 *       parameter, which backward then computes whole on its own (a tied vocabulary x width head: hundreds of MiB).
 *       The other stages have a gradient for every parameter, and a linear layer adds into it in place.</li>
 * </ul>
 * The rank needs {@link #peak()}: the larger of the build and the training step.
 */
public record MemoryPlan(int stage, int world, long parameters, long build, long state, long gathered, long activations) {
    /**
     * @param largestUnit parameters of the largest ZeRO-3 unit (a transformer block)
     * @param root        parameters in no unit (embeddings, tied head, final norm)
     * @param largestParameter elements of the largest single parameter
     * @param microSteps  backward passes per optimizer step (gradient accumulation, micro-batch pieces)
     */
    public static MemoryPlan predict(int stage, int world, long parameters, long largestUnit, long root, long largestParameter,
                                     long activations, int microSteps) {
        if (microSteps < 1) throw new IllegalArgumentException("micro-steps per optimizer step must be >= 1: " + microSteps);
        long p = parameters;
        int n = Math.max(1, world);
        if (n == 1) stage = 0; // one process keeps everything whatever the stage
        long state = switch (stage) {
            case 0 -> 16 * p;
            case 1 -> 8 * p + 8 * p / n;
            case 2 -> (microSteps > 1 ? 8 : 4) * p + 12 * p / n;
            case 3 -> 16 * p / n;
            default -> throw new IllegalArgumentException("ZeRO stage must be 0, 1, 2 or 3: " + stage);
        };
        // ZeRO-3 drops each unit's full parameters as soon as its shard is taken
        long build = stage == 3 ? 4 * p + 4 * Math.max(largestUnit, root) / n : 8 * p;
        // weights are gathered in place (N shards); a reduce-scatter buffer holds N + 1: the full gradient and the result
        long inUse = 2 * largestUnit + root;
        long gathered = stage == 3 ? 4 * inUse + 4 * inUse * (n + 1) / n : 0;
        return new MemoryPlan(stage, n, p, build, state, gathered, activations + (stage == 2 ? 4 * largestParameter : 0));
    }

    /**
     * Bytes that stay allocated from step to step (the training state and ZeRO-3's pooled gather and reduce-scatter
     * buffers): what a generational collector's old generation must hold.
     */
    public long longLived() {
        return state + gathered;
    }

    /** Bytes this rank needs at its fullest. */
    public long peak() {
        return Math.max(build, state + gathered + activations);
    }

    public String describe() {
        return String.format(Locale.ROOT, "%s on %d rank(s): %.2f GiB per rank (weights, gradients and optimizer %.2f GiB%s, "
                        + "activations %.2f GiB; %.2f GiB while the model is built)", stage == 0 ? (world == 1 ? "one process" : "DDP")
                        : "ZeRO-" + stage, world, gib(peak()), gib(state), stage == 3 ? String.format(Locale.ROOT, ", gathered units %.2f GiB", gib(gathered)) : "",
                gib(activations), gib(build));
    }

    static double gib(long bytes) {
        return bytes / (double) (1L << 30);
    }
}
