package dev.jtrain.train;

import dev.jtrain.gpt.data.Batch;

import dev.jtrain.autograd.GradMode;
import dev.jtrain.autograd.SavedMemory;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.AdamW;
import dev.jtrain.optim.CosineSchedule;
import dev.jtrain.optim.GradClip;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;

/**
 * Single-process training loop: gradient accumulation, global-norm clipping, warmup + cosine LR, AdamW,
 * periodic validation, and per-step metrics (tokens/s, MFU with the PaLM/llm.c FLOP count, time split).
 *
 * <p>Threading: run on one thread; kernels parallelise internally.
 */
public final class Trainer {
    /** Summary of a finished run. */
    public record Result(int steps, float lastTrainLoss, float lastValLoss, double meanTokensPerSecond, double meanMfu,
                         double seconds) {}

    private final TrainConfig config;
    private final Gpt model;
    private final BatchSource train;
    private final BatchSource val;
    private final FlatParameters params;
    private final AdamW optimizer;
    private final CosineSchedule schedule;
    private final StepArena arena = new StepArena();

    public Trainer(TrainConfig config, Gpt model, BatchSource train, BatchSource val) {
        this.config = config.validate();
        this.model = model;
        this.train = train;
        this.val = val;
        this.params = FlatParameters.of(model);
        this.optimizer = new AdamW(params, new AdamW.Options(0.9f, 0.95f, 1e-8f, config.weightDecay()));
        this.schedule = new CosineSchedule(config.learningRate(), config.minLearningRate(),
                Math.min(config.warmupSteps(), config.effectiveDecaySteps()), config.effectiveDecaySteps());
        model.setActivationCheckpointing(config.activationCheckpointing());
    }

    public FlatParameters parameters() { return params; }

    public AdamW optimizer() { return optimizer; }

    public Result run(TrainListener listener) {
        long start = System.nanoTime();
        int T = config.model().blockSize(), B = config.batchSize(), accum = config.gradAccum();
        double flopsPerStep = model.flopsPerToken(T) * config.tokensPerStep();
        double tokSum = 0, mfuSum = 0;
        int measured = 0, step = 0;
        float lastLoss = Float.NaN, lastVal = Float.NaN;
        model.train(true);
        for (; step < config.maxSteps(); step++) {
            if (config.maxSeconds() > 0 && seconds(start) >= config.maxSeconds()) break;
            long s0 = System.nanoTime();
            params.zeroGrad();
            SavedMemory.resetPeak();
            long dataNs = 0, computeNs = 0;
            double lossSum = 0;
            for (int micro = 0; micro < accum; micro++) {
                long d0 = System.nanoTime();
                Batch b = train.next((long) step * accum + micro);
                long c0 = System.nanoTime();
                try (var scope = arena.open()) { // activations and gradients recycled, not garbage-collected
                    Tensor loss = model.loss(b.x(), b.y(), B, T);
                    lossSum += loss.item();
                    (accum == 1 ? loss : loss.mul(1f / accum)).backward();
                }
                long c1 = System.nanoTime();
                dataNs += c0 - d0;
                computeNs += c1 - c0;
            }
            long o0 = System.nanoTime();
            float norm = GradClip.clipByGlobalNorm(params.grad(), config.gradClip());
            float lr = schedule.lr(step);
            optimizer.step(lr);
            long s1 = System.nanoTime();
            double stepSec = (s1 - s0) / 1e9;
            double tokPerSec = config.tokensPerStep() / stepSec;
            double mfu = flopsPerStep / stepSec / config.peakFlops();
            lastLoss = (float) (lossSum / accum);
            if (step > 0) { // step 0 includes JIT warm-up
                tokSum += tokPerSec;
                mfuSum += mfu;
                measured++;
            }
            listener.onStep(new StepMetrics(step, lastLoss, lr, norm, tokPerSec, mfu, stepSec * 1e3, computeNs / 1e6,
                    0.0, (s1 - o0) / 1e6, dataNs / 1e6, SavedMemory.peakBytes(), seconds(start)));
            boolean evalNow = config.evalInterval() > 0 && step > 0 && step % config.evalInterval() == 0;
            if (evalNow) lastVal = evaluateAndReport(step, listener, start);
        }
        lastVal = evaluateAndReport(step, listener, start);
        return new Result(step, lastLoss, lastVal, measured > 0 ? tokSum / measured : 0, measured > 0 ? mfuSum / measured : 0,
                seconds(start));
    }

    private float evaluateAndReport(int step, TrainListener listener, long start) {
        float v = evaluate(val, config.evalBatches());
        float t = evaluate(offset(train, 1L << 40), config.evalBatches());
        listener.onEval(new EvalMetrics(step, t, v, seconds(start)));
        return v;
    }

    private static BatchSource offset(BatchSource src, long by) {
        return s -> src.next(s + by);
    }

    /** Mean loss over the first {@code batches} batches of {@code src}, in eval mode, without a graph. */
    public float evaluate(BatchSource src, int batches) {
        boolean was = model.isTraining();
        model.train(false);
        double sum = 0;
        try (var g = GradMode.noGrad()) {
            for (int i = 0; i < batches; i++) {
                Batch b = src.next(i);
                try (var scope = arena.open()) {
                    sum += model.loss(b.x(), b.y(), b.rows(), b.blockSize()).item();
                }
            }
        } finally {
            model.train(was);
        }
        return (float) (sum / batches);
    }

    private static double seconds(long startNs) {
        return (System.nanoTime() - startNs) / 1e9;
    }
}
