package dev.jtrain.parallel;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.FlatOptimizer;
import dev.jtrain.optim.GradClip;
import dev.jtrain.tensor.state.Stateful;

/**
 * One process, no communication: clip, then the optimizer over the flat buffers. Under {@link GradReduce#ORDERED}
 * the pieces of a split micro-batch are summed in the fixed order, as the ranks they stand for would have.
 */
public final class SingleProcess implements DataParallel {
    private final FlatParameters params;
    private final FlatOptimizer opt;
    /** Under {@link GradReduce#ORDERED}: the pieces' sums, null otherwise. */
    private final PieceSums pieces;

    public SingleProcess(FlatParameters params, DataParallelOptions o) {
        this.params = params;
        this.opt = new FlatOptimizer(params, o.optimizer());
        this.pieces = o.gradReduce() == GradReduce.ORDERED ? new PieceSums(params.size()) : null;
    }

    @Override public int rank() { return 0; }

    @Override public int worldSize() { return 1; }

    @Override public void zeroGrad() { params.zeroGrad(); }

    @Override public void beginMicroStep(boolean sync) {}

    @Override public boolean ordered() { return pieces != null; }

    @Override
    public void beginPiece(int piece, int of) {
        if (pieces == null) DataParallel.super.beginPiece(piece, of);
        else pieces.begin(piece, of, params.grad());
    }

    @Override
    public long finishGradients() {
        if (pieces != null) pieces.combine(params.grad(), 0, params.size());
        return 0;
    }

    @Override
    public float step(float lr, float maxNorm) {
        float norm = GradClip.globalNorm(params.grad());
        opt.step(lr, GradClip.coefficient(norm, maxNorm)); // clipping folded into the update's read of each gradient
        return norm;
    }

    @Override public float average(float value) { return value; }

    @Override public long lastStepCommNanos() { return 0; }

    @Override
    public MemoryReport memory() { return MemoryReport.replicated(params, opt); }

    @Override public int stepCount() { return opt.stepCount(); }

    public FlatOptimizer optimizer() { return opt; }

    @Override
    public Stateful modelState() { return ReplicatedState.parameters(params, false); }

    @Override
    public Stateful optimizerState() {
        return ReplicatedState.optimizer(params, opt, false);
    }
}
