package dev.jtrain.train;

import dev.jtrain.gpt.GptConfig;
import dev.jtrain.tensor.kernel.Precision;

/**
 * Everything a training run needs, resolved once (Aeron's Context.conclude idea): {@link #validate()} checks it
 * all and fails with one clear message.
 *
 * @param batchSize      sequences per micro-batch (global, before any data-parallel split)
 * @param gradAccum      micro-batches per optimizer step
 * @param maxSteps       optimizer steps (upper bound)
 * @param maxSeconds     wall-clock budget in seconds; 0 = none (the demo trains "for a few minutes")
 * @param warmupSteps    linear LR warmup steps
 * @param evalInterval   steps between validation-loss evaluations; 0 = only at the end
 * @param evalBatches    batches averaged per validation-loss estimate
 * @param peakFlops      FLOP/s that MFU is measured against (from `jtrain bench matmul` or the user)
 * @param decaySteps     steps of the cosine LR decay (after which LR stays at the minimum); 0 = maxSteps
 * @param precision      matmul precision of forward, backward and evaluation ({@link Precision#BF16}: bf16 operands,
 *                       fp32 accumulation, as autocast); weights, gradients and optimizer state stay fp32 either way
 */
public record TrainConfig(GptConfig model, int batchSize, int gradAccum, int maxSteps, double maxSeconds,
                          float learningRate, float minLearningRate, int warmupSteps, float weightDecay,
                          float gradClip, int evalInterval, int evalBatches, long seed,
                          boolean activationCheckpointing, double peakFlops, int decaySteps, Precision precision) {
    public TrainConfig {
        if (precision == null) throw new IllegalArgumentException("training precision must be given (fp32 or bf16)");
    }

    /** An fp32 configuration. */
    public TrainConfig(GptConfig model, int batchSize, int gradAccum, int maxSteps, double maxSeconds,
                       float learningRate, float minLearningRate, int warmupSteps, float weightDecay,
                       float gradClip, int evalInterval, int evalBatches, long seed,
                       boolean activationCheckpointing, double peakFlops, int decaySteps) {
        this(model, batchSize, gradAccum, maxSteps, maxSeconds, learningRate, minLearningRate, warmupSteps, weightDecay,
                gradClip, evalInterval, evalBatches, seed, activationCheckpointing, peakFlops, decaySteps, Precision.FP32);
    }

    /** This configuration with matmuls in {@code p}. */
    public TrainConfig withPrecision(Precision p) {
        return new TrainConfig(model, batchSize, gradAccum, maxSteps, maxSeconds, learningRate, minLearningRate,
                warmupSteps, weightDecay, gradClip, evalInterval, evalBatches, seed, activationCheckpointing, peakFlops,
                decaySteps, p);
    }

    public TrainConfig validate() {
        StringBuilder bad = new StringBuilder();
        if (batchSize < 1) bad.append(" batchSize=").append(batchSize).append(" (must be >= 1);");
        if (gradAccum < 1) bad.append(" gradAccum=").append(gradAccum).append(" (must be >= 1);");
        if (maxSteps < 1) bad.append(" maxSteps=").append(maxSteps).append(" (must be >= 1);");
        if (maxSeconds < 0) bad.append(" maxSeconds=").append(maxSeconds).append(" (must be >= 0);");
        if (!(learningRate > 0)) bad.append(" learningRate=").append(learningRate).append(" (must be > 0);");
        if (minLearningRate < 0 || minLearningRate > learningRate)
            bad.append(" minLearningRate=").append(minLearningRate).append(" (must be in [0, learningRate]);");
        if (warmupSteps < 0) bad.append(" warmupSteps=").append(warmupSteps).append(";");
        if (evalBatches < 1) bad.append(" evalBatches=").append(evalBatches).append(" (must be >= 1);");
        if (!(peakFlops > 0)) bad.append(" peakFlops=").append(peakFlops).append(" (must be > 0);");
        if (bad.length() > 0) throw new IllegalArgumentException("invalid training configuration:" + bad);
        return this;
    }

    /** Steps over which the cosine schedule decays: a time-budgeted run decays over a realistic horizon. */
    public int effectiveDecaySteps() {
        return decaySteps > 0 ? Math.min(decaySteps, maxSteps) : maxSteps;
    }

    public int tokensPerStep() {
        return batchSize * gradAccum * model.blockSize();
    }
}
