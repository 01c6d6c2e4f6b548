package dev.jtrain.parallel;

import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.nn.ShardedModel;
import dev.jtrain.tensor.state.Stateful;

/**
 * How a training step's gradients become an optimizer update across ranks. The trainer calls, per optimizer step:
 * <pre>
 *   zeroGrad()
 *   for each micro-batch: beginMicroStep(last) ; forward ; backward      (collectives launch from grad hooks)
 *   finishGradients()                                                   (waits; returns exposed comm time)
 *   step(lr, maxNorm)                                                   (clip + update + parameter sync)
 * </pre>
 * Implementations: {@link SingleProcess} (no communication), {@link DistributedDataParallel} (all-reduce buckets,
 * replicated optimizer), {@link ZeroOptimizer} (reduce-scatter buckets, sharded optimizer, all-gather; ZeRO-1/2);
 * {@link #create} picks one from the options.
 *
 * <p>Threading: all calls from the training thread.
 */
public interface DataParallel extends AutoCloseable {
    /**
     * The strategy for {@code options.zeroStage()} over {@code group}: one process when the group is null or has one
     * rank, DDP at stage 0, ZeRO at stages 1 and 2. Collective launches and completions go to {@code trace} (may be
     * null).
     */
    static DataParallel create(FlatParameters params, ProcessGroup group, DataParallelOptions options, CommTrace trace) {
        return create(params, null, group, options, trace);
    }

    /**
     * As {@link #create(FlatParameters, ProcessGroup, DataParallelOptions, CommTrace)}, and ZeRO-3 at stage 3, which
     * needs the model cut into units ({@code model}; may be null for the other stages).
     */
    static DataParallel create(FlatParameters params, ShardedModel model, ProcessGroup group, DataParallelOptions options,
                               CommTrace trace) {
        options.validate();
        if (group == null || group.size() == 1) return new SingleProcess(params, options);
        return switch (options.zeroStage()) {
            case 0 -> new DistributedDataParallel(params, group, options, trace);
            case 1, 2 -> new ZeroOptimizer(params, group, options, trace);
            default -> {
                if (model == null)
                    throw new IllegalArgumentException("ZeRO-3 needs a model cut into units (dev.jtrain.nn.ShardedModel); this one is not");
                yield new FullyShardedDataParallel(params, model, group, options, trace);
            }
        };
    }

    int rank();

    int worldSize();

    void zeroGrad();

    /** Called before each micro-batch's backward; {@code sync} is false on accumulation micro-steps (noSync). */
    void beginMicroStep(boolean sync);

    /**
     * Whether gradients are summed in one fixed order ({@link GradReduce#ORDERED}). The trainer then runs a
     * micro-batch it splits into pieces piece by piece, calling {@link #beginPiece} before each.
     */
    default boolean ordered() { return false; }

    /**
     * Piece {@code piece} (0-based) of {@code of} begins, before its first micro-step; its gradients are kept apart
     * from the earlier pieces' and summed with them in the fixed order ({@link PieceSums}). Ordered strategies only.
     */
    default void beginPiece(int piece, int of) {
        throw new UnsupportedOperationException("pieces are summed in order only under --grad-reduce ordered");
    }

    /** Waits for this step's gradient collectives; returns nanoseconds spent waiting (exposed communication). */
    long finishGradients();

    /** Clips by global norm (maxNorm ≤ 0: no clipping), updates parameters, synchronises them; returns the norm. */
    float step(float lr, float maxNorm);

    /** Mean of a scalar over ranks (for logging the global loss). */
    float average(float value);

    /**
     * Starts the means over ranks of a few scalars (a step's loss and the ranks' stop votes) without waiting for them:
     * one small collective that runs beside the optimizer step, where a blocking one per scalar stopped every rank
     * at the end of each step to absorb the others' lag. Every rank calls it at the same point, with as many values.
     */
    default Means averageAsync(float... values) {
        float[] out = new float[values.length];
        for (int i = 0; i < values.length; i++) out[i] = average(values[i]);
        return () -> out;
    }

    /** Means {@link #averageAsync} started. */
    @FunctionalInterface
    interface Means {
        /** Waits for the collective; the means, in the order the values were given. */
        float[] await();
    }

    /** Nanoseconds of the last {@link #step} spent waiting on collectives. */
    long lastStepCommNanos();

    /** Bytes this rank holds for parameters, gradients and optimizer state. */
    MemoryReport memory();

    /** Optimizer steps taken so far. */
    int stepCount();

    /** The model parameters as checkpointable state (replicated on every rank under DDP and ZeRO). */
    Stateful modelState();

    /** The optimizer state (its buffers and step count) as checkpointable state: whole, replicated, or ZeRO shards. */
    Stateful optimizerState();

    /**
     * After training, before the model runs on its own (sampling, saving weights): a strategy that sharded the
     * parameters gathers them back on every rank (collective). Nothing to do for the others.
     */
    default void unshard() {}

    @Override
    default void close() {}
}
