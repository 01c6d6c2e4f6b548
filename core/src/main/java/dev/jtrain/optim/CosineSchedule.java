package dev.jtrain.optim;

/**
 * Linear warmup then cosine decay to minLr (nanoGPT's get_lr, after Loshchilov &amp; Hutter's SGDR):
 * lr(t) = maxLr·(t+1)/warmup for t &lt; warmup; minLr + ½(1 + cos(π·r))(maxLr - minLr) with r the decay progress;
 * minLr after decaySteps.
 */
public record CosineSchedule(float maxLr, float minLr, int warmupSteps, int decaySteps) {
    public CosineSchedule {
        if (maxLr <= 0 || minLr < 0 || minLr > maxLr || warmupSteps < 0 || decaySteps < warmupSteps)
            throw new IllegalArgumentException("invalid schedule: maxLr=" + maxLr + ", minLr=" + minLr
                    + ", warmupSteps=" + warmupSteps + ", decaySteps=" + decaySteps);
    }

    public float lr(int step) {
        if (step < warmupSteps) return maxLr * (step + 1) / warmupSteps;
        if (step >= decaySteps) return minLr;
        double r = (double) (step - warmupSteps) / Math.max(1, decaySteps - warmupSteps);
        return (float) (minLr + 0.5 * (1 + Math.cos(Math.PI * r)) * (maxLr - minLr));
    }
}
