package dev.jtrain.train;

import dev.jtrain.autograd.Autocast;
import dev.jtrain.autograd.GradMode;
import dev.jtrain.autograd.SavedMemory;
import dev.jtrain.checkpoint.CheckpointException;
import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.LoadOptions;
import dev.jtrain.checkpoint.LoadReport;
import dev.jtrain.parallel.DataParallel;
import dev.jtrain.parallel.DataParallelOptions;
import dev.jtrain.parallel.SingleProcess;
import dev.jtrain.gpt.LanguageModel;
import dev.jtrain.gpt.data.Batch;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.CosineSchedule;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Single-process training loop: gradient accumulation, global-norm clipping, warmup + cosine LR, AdamW,
 * periodic validation, and per-step metrics (tokens/s, MFU with the PaLM/llm.c FLOP count, time split).
 *
 * <p>Threading: run on one thread; kernels parallelise internally.
 */
public final class Trainer {
    /**
     * Summary of a finished run; {@code stopRequested}: it ended early on {@link #requestStop} or
     * {@link #requestStopForRegroup} (after a checkpoint, if any), {@code forRegroup} telling which.
     */
    public record Result(int steps, float lastTrainLoss, float lastValLoss, double meanTokensPerSecond, double meanMfu,
                         double seconds, boolean stopRequested, boolean forRegroup) {}

    private final TrainConfig config;
    private final LanguageModel model;
    private final BatchSource train;
    private final BatchSource val;
    private final FlatParameters params;
    private final DataParallel parallel;
    private final CosineSchedule schedule;
    private final StepArena arena = new StepArena();
    private TraceWriter trace;
    /** Where checkpoints go, each tier on its own interval (disk; the nodes' memory). */
    private final List<CheckpointTier> tiers = new ArrayList<>();
    /** First step to run: 0, or the step a resumed checkpoint was taken after. */
    private int startStep;
    /** Each micro-batch runs as this many accumulated pieces (a shrunken job keeps its per-rank micro-batch size). */
    private int microBatchSplit = 1;
    /** Set from a signal handler (preemption); read once per step. */
    private volatile boolean stopRequested;

    /** Single process. */
    public Trainer(TrainConfig config, LanguageModel model, BatchSource train, BatchSource val) {
        this(config, model, train, val, p -> new SingleProcess(p, DataParallelOptions.defaults().withWeightDecay(config.weightDecay())));
    }

    /**
     * With a data-parallel strategy built over the model's flat parameters (DDP, ZeRO). {@code train} and {@code val}
     * give this rank's share of each global batch; losses are averaged over ranks.
     */
    public Trainer(TrainConfig config, LanguageModel model, BatchSource train, BatchSource val,
                   Function<FlatParameters, DataParallel> strategy) {
        this(config, model, train, val, FlatParameters.of(model.module()), strategy);
    }

    /**
     * As above, over parameters the caller laid out: {@link FlatParameters#layoutOf} for ZeRO-3, which must not hold
     * a flat copy of the whole model.
     */
    public Trainer(TrainConfig config, LanguageModel model, BatchSource train, BatchSource val, FlatParameters params,
                   Function<FlatParameters, DataParallel> strategy) {
        this.config = config.validate();
        this.model = model;
        this.train = train;
        this.val = val;
        this.params = params;
        this.parallel = strategy.apply(params);
        this.schedule = new CosineSchedule(config.learningRate(), config.minLearningRate(),
                Math.min(config.warmupSteps(), config.effectiveDecaySteps()), config.effectiveDecaySteps());
        model.setActivationCheckpointing(config.activationCheckpointing());
    }

    public FlatParameters parameters() { return params; }

    public DataParallel parallel() { return parallel; }

    /** Records data, per-block compute, waits and optimizer steps into {@code trace} (collectives: pass it to the strategy). */
    public void setTrace(TraceWriter trace) {
        this.trace = trace;
        model.setTracer(trace);
    }

    /**
     * Saves {@code trainer}, {@code model} and {@code optimizer} state into {@code dir} every {@code every} steps
     * (asynchronously if {@code async}: training continues while the checkpoint is written), keeping the last
     * {@code keepLast} (0 = all). The checkpointer is created by the caller (collectively, on every rank).
     */
    public void setCheckpointing(Checkpointer checkpointer, Path dir, int every, boolean async, int keepLast) {
        addCheckpointTier(new CheckpointTier("disk", checkpointer, dir, every, async, keepLast));
    }

    /** Adds a tier the run checkpoints to on its own interval (a step due in several tiers is saved in each). */
    public void addCheckpointTier(CheckpointTier tier) {
        tiers.add(tier);
        if (trace != null)
            tier.checkpointer().setSpanSink((name, s, e) -> trace.span(tier.name() + " " + name, TraceWriter.TID_CHECKPOINT, s, e));
    }

    public List<CheckpointTier> checkpointTiers() { return List.copyOf(tiers); }

    /**
     * Runs each of this rank's micro-batches as {@code pieces} accumulated pieces of equal rows: the same gradients (a
     * mean of means over equal parts; with dropout, masks drawn in another order) with 1/pieces of the activation memory. A job that lost nodes keeps its global
     * batch and, this way, the per-rank batch it started with.
     */
    public void setMicroBatchSplit(int pieces) {
        if (pieces < 1) throw new IllegalArgumentException("micro-batch split must be >= 1: " + pieces);
        this.microBatchSplit = pieces;
    }

    /**
     * Everything a resume needs, by name: the trainer's position (steps done, dropout RNG, a config echo), the model
     * parameters and the optimizer state, as the data-parallel strategy shards them. Batches are a pure function of
     * (seed, step), so the step is the data position.
     */
    public Map<String, Stateful> checkpointState() {
        Map<String, Stateful> s = new LinkedHashMap<>();
        s.put("trainer", new Stateful() {
            @Override public List<TensorShard> shards() { return List.of(); }

            @Override public Map<String, String> metadata() {
                Map<String, String> m = new LinkedHashMap<>();
                m.put("step", Integer.toString(startStep));
                m.put("dropout_rng", Long.toString(model.dropoutRng().state()));
                m.put("config", config.toString());
                m.putAll(model.shapeMetadata()); // so `jtrain ckpt consolidate` can rebuild the model
                return m;
            }

            @Override public void restore(Map<String, String> m) {
                startStep = Integer.parseInt(m.getOrDefault("step", "0"));
                if (m.containsKey("dropout_rng")) model.dropoutRng().setState(Long.parseLong(m.get("dropout_rng")));
            }
        });
        s.put("model", parallel.modelState());
        s.put("optimizer", parallel.optimizerState());
        return s;
    }

    /** What {@link #resumeNewest} loaded, from which tier, and the tiers it could not load from (why). */
    public record Resumed(CheckpointTier tier, LoadReport report, List<String> fellBack) {}

    /**
     * Loads the newest checkpoint that exists in any tier and verifies: the tier holding the newest step first (on a
     * tie, the earlier tier in {@code preferred}, e.g. memory before disk: it loads faster), then the others. A tier
     * that fails (a node lost with its buddy took a shard with it; every checkpoint there is corrupt) is skipped and
     * named in {@link Resumed#fellBack}. Every rank sees the same outcome: the ranks first agree on each tier's newest
     * step, and a failed load fails on every rank alike. Empty when no tier holds a checkpoint. Collective.
     */
    public Optional<Resumed> resumeNewest(List<CheckpointTier> preferred, boolean broadcast) {
        List<CheckpointTier> order = new ArrayList<>();
        Map<CheckpointTier, Long> newest = new LinkedHashMap<>();
        List<String> fellBack = new ArrayList<>();
        for (CheckpointTier t : preferred) {
            long mine = t.checkpointer().newestStep(t.root()).orElse(-1);
            long agreed;
            try {
                agreed = agreedStep(mine, t);
            } catch (CheckpointException e) { // every rank alike: the disagreement is agreed on
                fellBack.add(t.name() + ": " + e.getMessage());
                continue;
            }
            if (agreed >= 0) {
                newest.put(t, agreed);
                order.add(t);
            }
        }
        order.sort(Comparator.comparingLong((CheckpointTier t) -> -newest.get(t))); // stable: ties keep preference
        for (int i = 0; i < order.size(); i++) {
            CheckpointTier t = order.get(i);
            // not below the next tier's newest: falling back within this tier must not skip a newer step there
            long floor = i + 1 < order.size() ? newest.get(order.get(i + 1)) : -1;
            try {
                LoadReport r = agreedLoad(t, floor, broadcast);
                // the tiers that failed hold newer steps this run will save again
                for (CheckpointTier other : order)
                    if (other != t && newest.get(other) > r.step())
                        for (String moved : other.checkpointer().setAsideNewerThan(other.root(), r.step()))
                            fellBack.add(other.name() + ": set aside " + moved);
                return Optional.of(new Resumed(t, r, fellBack));
            } catch (CheckpointException e) {
                fellBack.add(t.name() + " (step " + newest.get(t) + "): " + e.getMessage());
            }
        }
        if (!fellBack.isEmpty() && !order.isEmpty())
            throw new CheckpointException("no checkpoint in any tier loads: " + String.join("; ", fellBack));
        return Optional.empty();
    }

    /**
     * Loads from {@code t}, and fails on every rank if it failed on any: a tier whose checkpointer spans one node's
     * ranks (each node's own copy in its memory) loads node by node, and one node's failure must not leave the others
     * training from a state it does not have.
     */
    private LoadReport agreedLoad(CheckpointTier t, long floor, boolean broadcast) {
        LoadReport r = null;
        CheckpointException failed = null;
        try {
            r = t.checkpointer().load(t.root(), checkpointState(), LoadOptions.newestValid().withBroadcast(broadcast).atLeast(floor));
        } catch (CheckpointException e) {
            failed = e;
        }
        if (parallel.worldSize() > 1) {
            boolean anyFailed = parallel.average(failed != null ? 1f : 0f) > 0f; // every rank alike
            if (anyFailed && failed == null) {
                failed = new CheckpointException("another rank could not load from " + t.name() + " (step " + r.step()
                        + " loaded here); every rank moves on together");
            } else if (!anyFailed && !sameOnEveryRank(r.step())) {
                failed = new CheckpointException("ranks loaded different steps from " + t.name() + " (step " + r.step() + " here)");
            }
        }
        if (failed != null) throw failed;
        return r;
    }

    /** Whether every rank passed the same {@code v} (a step: exact as a float below 2^24). Collective, every rank alike. */
    private boolean sameOnEveryRank(long v) {
        float mine = (float) v;
        return parallel.average(parallel.average(mine) == mine ? 0f : 1f) == 0f;
    }

    /** {@code mine} if every rank sees the same newest step in {@code t}; else fails on every rank, naming it. */
    private long agreedStep(long mine, CheckpointTier t) {
        if (parallel.worldSize() == 1) return mine;
        if (!sameOnEveryRank(mine))
            throw new CheckpointException("ranks see different newest checkpoints in " + t.name() + " ("
                    + t.root() + "): this rank sees step " + mine + "; make every rank see the same checkpoints (a shared"
                    + " directory), or resume from an explicit step");
        return mine;
    }

    /** Loads the checkpoint {@code options} select under {@code dir}; {@link #run} then continues after its step. Collective. */
    public LoadReport resume(Checkpointer checkpointer, Path dir, LoadOptions options) {
        return checkpointer.load(dir, checkpointState(), options);
    }

    /**
     * Asks {@link #run} to stop at the next step boundary (a scheduler's SIGTERM: preemption, {@code srun --signal}).
     * Ranks are signalled at slightly different times, so they first agree on the step (one tiny all-reduce per
     * step); then, with checkpointing set up, they save that step synchronously and {@code run} returns.
     * Thread-safe: meant to be called from a signal handler.
     */
    public void requestStop() { stopRequested = true; }

    /**
     * Asks {@link #run} to stop at the next step boundary because the group is about to change (a node rejoins) and
     * will continue from this run's state: as {@link #requestStop}, but the save goes to the tier saved most often
     * (the nodes' memory, when there is one), which outlives the regroup and which the next attempt loads first.
     * Thread-safe.
     */
    public void requestStopForRegroup() { regroupRequested = true; }

    private volatile boolean regroupRequested;

    private static final int VOTE_LOSS = 0, VOTE_STOP_OR_REGROUP = 1, VOTE_STOP = 2, VOTE_OVER_TIME = 3;

    /**
     * This rank's loss and votes, whose means over ranks decide for all of them: a vote's mean is above zero when any
     * rank says yes. Taken where the step's gradients are done, before its optimizer update, so a stop requested
     * during the update, an evaluation or a checkpoint save is acted on after the next step (and a time limit
     * measured there), where it used to be the step's start: the price of not stopping every rank at each step's end.
     */
    private float[] votes(long start, float loss) {
        return new float[]{loss, stopRequested || regroupRequested ? 1f : 0f, stopRequested ? 1f : 0f,
                config.maxSeconds() > 0 && seconds(start) >= config.maxSeconds() ? 1f : 0f};
    }

    /** Steps already done when {@link #run} starts (after {@link #resume}). */
    public int startStep() { return startStep; }

    public Result run(TrainListener listener) {
        long start = System.nanoTime();
        int T = config.model().blockSize(), accum = config.gradAccum();
        double flopsPerStep = model.flopsPerToken(T) * config.tokensPerStep();
        double tokSum = 0, mfuSum = 0;
        int measured = 0, step = startStep, first = startStep;
        float lastLoss = Float.NaN, lastVal = Float.NaN;
        int evaluatedAt = -1;
        model.module().train(true);
        boolean stopped = false, forRegroup = false;
        for (CheckpointTier t : tiers) t.startedAt(startStep);
        // the ranks' votes (stop, regroup, time is up) are agreed at the end of each step with its loss; before the
        // first step, on their own
        float[] agreed = null;
        for (; step < config.maxSteps(); step++) {
            if (agreed == null) agreed = parallel.averageAsync(votes(start, 0f)).await();
            if (agreed[VOTE_STOP_OR_REGROUP] > 0f) {
                stopped = true;
                forRegroup = agreed[VOTE_STOP] == 0f; // a preemption on any rank outranks a regroup
                startStep = step;
                // one synchronous save: in the first tier (disk, when there is one) when the job is about to end; for
                // a regroup in the tier saved most often, whose holders outlive the regroup and which is loaded first
                CheckpointTier t = tiers.isEmpty() ? null : forRegroup ? mostFrequent() : tiers.getFirst();
                if (t != null && step > t.lastSaved()) t.save(step, checkpointState(), true, listener, start);
                break;
            }
            // Every rank must stop at the same step (a rank that runs one more step would wait forever in its
            // collectives): stop when any rank's clock said so.
            if (agreed[VOTE_OVER_TIME] > 0f) break;
            long s0 = System.nanoTime();
            parallel.zeroGrad();
            SavedMemory.resetPeak();
            long dataNs = 0, computeNs = 0;
            double lossSum = 0;
            int pieces = microBatchSplit;
            // Under an ordered reduction each piece stands for a rank of the job as launched: it runs all its
            // micro-batches before the next piece begins, and the pieces' sums are combined in the fixed order.
            boolean pieceByPiece = pieces > 1 && parallel.ordered();
            for (int outer = 0; outer < (pieceByPiece ? pieces : 1); outer++) {
                if (pieceByPiece) parallel.beginPiece(outer, pieces);
                for (int micro = 0; micro < accum; micro++) {
                    long d0 = System.nanoTime();
                    Batch whole = train.next((long) step * accum + micro);
                    if (whole.rows() % pieces != 0)
                        throw new IllegalStateException("micro-batch split " + pieces + " does not divide this rank's " + whole.rows() + " rows");
                    long c0 = System.nanoTime();
                    for (int piece = pieceByPiece ? outer : 0; piece < (pieceByPiece ? outer + 1 : pieces); piece++) {
                        Batch b = pieces == 1 ? whole : whole.rows(piece * (whole.rows() / pieces), whole.rows() / pieces);
                        parallel.beginMicroStep(micro == accum - 1 && piece == pieces - 1); // noSync on accumulation micro-steps
                        try (var scope = arena.open(); // activations and gradients recycled, not garbage-collected
                             var cast = Autocast.with(config.precision())) {
                            Tensor loss = model.loss(b.x(), b.y(), b.rows(), T);
                            lossSum += loss.item() / pieces;
                            (accum * pieces == 1 ? loss : loss.mul(1f / (accum * pieces))).backward();
                        }
                    }
                    long c1 = System.nanoTime();
                    dataNs += c0 - d0;
                    computeNs += c1 - c0;
                    if (trace != null) trace.span("data", TraceWriter.TID_DATA, d0, c0);
                }
            }
            long w0 = System.nanoTime();
            long commNs = parallel.finishGradients();
            long f0 = System.nanoTime();
            // an overlapped snapshot may still be copying the parameters and optimizer state the step will change
            long fenceNs = 0;
            for (CheckpointTier t : tiers) fenceNs += t.awaitSnapshot();
            long o0 = System.nanoTime();
            // the step's loss and the votes for the next one, agreed while the optimizer runs
            DataParallel.Means means = parallel.averageAsync(votes(start, (float) (lossSum / accum)));
            float lr = schedule.lr(step);
            float norm = parallel.step(lr, config.gradClip());
            commNs += parallel.lastStepCommNanos();
            long s1 = System.nanoTime();
            agreed = means.await();
            if (trace != null) {
                trace.span("wait for gradients", TraceWriter.TID_WAIT, w0, f0);
                if (fenceNs > 0) trace.span("wait for checkpoint snapshot", TraceWriter.TID_WAIT, f0, o0);
                trace.span("optimizer step " + step, TraceWriter.TID_OPTIM, o0, s1);
            }
            double stepSec = (s1 - s0) / 1e9;
            double tokPerSec = config.tokensPerStep() / stepSec;
            double mfu = flopsPerStep / stepSec / (config.peakFlops() * parallel.worldSize());
            lastLoss = agreed[VOTE_LOSS];
            if (step > first) { // the first step includes JIT warm-up
                tokSum += tokPerSec;
                mfuSum += mfu;
                measured++;
            }
            listener.onStep(new StepMetrics(step, lastLoss, lr, norm, tokPerSec, mfu, stepSec * 1e3, computeNs / 1e6,
                    commNs / 1e6, (s1 - o0 - parallel.lastStepCommNanos()) / 1e6, dataNs / 1e6, SavedMemory.peakBytes(),
                    peakHeapBytes(), seconds(start)));
            boolean evalNow = config.evalInterval() > 0 && step > 0 && step % config.evalInterval() == 0;
            if (evalNow) {
                lastVal = evaluateAndReport(step, listener, start);
                evaluatedAt = step;
            }
            for (CheckpointTier t : tiers) t.reportIfDone(listener, start);
            arena.settle(); // after the first step (or one that grew the pool): its arrays tenured at once
            boolean due = false;
            for (CheckpointTier t : tiers) due |= t.dueAfter(step + 1);
            if (due) {
                startStep = step + 1; // what the checkpoint's trainer state records: steps done
                for (CheckpointTier t : tiers) if (t.dueAfter(step + 1)) t.save(step + 1, checkpointState(), false, listener, start);
            }
        }
        for (CheckpointTier t : tiers) t.awaitPrevious(listener, start); // the last checkpoints are durable before run returns
        // the last step's model (a preempted run skips it: the scheduler's grace period is short)
        if (!stopped && evaluatedAt != step - 1) lastVal = evaluateAndReport(step - 1, listener, start);
        return new Result(step, lastLoss, lastVal, measured > 0 ? tokSum / measured : 0, measured > 0 ? mfuSum / measured : 0,
                seconds(start), stopped, forRegroup);
    }

    private CheckpointTier mostFrequent() {
        CheckpointTier best = tiers.getFirst();
        for (CheckpointTier t : tiers) if (t.every() > 0 && (best.every() == 0 || t.every() < best.every())) best = t;
        return best;
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
        boolean was = model.module().isTraining();
        model.module().train(false);
        double sum = 0;
        try (var g = GradMode.noGrad(); var cast = Autocast.with(config.precision())) {
            for (int i = 0; i < batches; i++) {
                Batch b = src.next(i);
                try (var scope = arena.open()) {
                    sum += model.loss(b.x(), b.y(), b.rows(), b.blockSize()).item();
                }
            }
        } finally {
            model.module().train(was);
        }
        return parallel.average((float) (sum / batches));
    }

    /** Sum of the heap pools' peak usage: what this rank's JVM needed at most so far. */
    static long peakHeapBytes() {
        long sum = 0;
        for (var pool : ManagementFactory.getMemoryPoolMXBeans())
            if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) sum += pool.getPeakUsage().getUsed();
        return sum;
    }

    private static double seconds(long startNs) {
        return (System.nanoTime() - startNs) / 1e9;
    }
}
