package dev.jtrain.parallel;

import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.Work;
import dev.jtrain.comm.algo.OrderedAllReduce;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.FlatOptimizer;
import dev.jtrain.optim.GradClip;
import dev.jtrain.tensor.state.Stateful;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * Distributed data parallel (PyTorch DDP's design, Li et al. 2020): parameters replicated, rank 0's values broadcast
 * at start; gradients grouped into {@link BucketPlan buckets} whose asynchronous all-reduce (AVG) is launched from the
 * post-accumulate-grad hooks as soon as the bucket's last gradient is final, while backward continues. Buckets launch
 * strictly in index order on every rank (a bucket that becomes ready early waits for its predecessors), so the
 * collectives match across ranks. {@link #beginMicroStep beginMicroStep(false)} is noSync: gradients accumulate
 * locally and only the last micro-step communicates.
 *
 * <p>Under {@link GradReduce#ORDERED} every bucket goes through {@link OrderedAllReduce}, after the pieces of a
 * split micro-batch are summed in the same order ({@link PieceSums}).
 *
 * <p>Cost per step: one all-reduce of the gradients, 2(p-1)/p · 4P bytes per rank with a ring; memory 16 B/param.
 */
public final class DistributedDataParallel implements DataParallel {
    private final FlatParameters params;
    private final ProcessGroup pg;
    private final DataParallelOptions options;
    private final BucketPlan plan;
    private final FlatOptimizer opt;
    private final BucketLaunches launches;
    private final Work[] works;
    private final CommTrace trace;
    /** Under {@link GradReduce#ORDERED}: the pieces' sums, null otherwise. */
    private final PieceSums pieces;
    private boolean sync = true;
    private long lastStepComm;

    public DistributedDataParallel(FlatParameters params, ProcessGroup pg, DataParallelOptions options, CommTrace trace) {
        this.params = params;
        this.pg = pg;
        this.options = options;
        this.trace = trace == null ? CommTrace.NONE : trace;
        ParameterSync.verifyAndBroadcast(params, pg);
        this.plan = new BucketPlan(params, options.firstBucketBytes(), options.bucketBytesFor(pg));
        this.opt = new FlatOptimizer(params, options.optimizer());
        works = new Work[plan.buckets().size()];
        pieces = options.gradReduce() == GradReduce.ORDERED ? new PieceSums(params.size()) : null;
        launches = new BucketLaunches(plan, this::launch);
        List<FlatParameters.Slot> slots = params.slots();
        for (int s = 0; s < slots.size(); s++) {
            final int slot = s;
            slots.get(s).param().registerPostAccumulateGradHook(t -> onGradReady(slot));
        }
    }

    public BucketPlan plan() { return plan; }

    private void onGradReady(int slot) {
        if (sync) launches.gradientReady(slot, options.overlap());
    }

    private void launch(BucketPlan.Bucket b) {
        trace.begin("allreduce bucket " + b.index(), b.length() * 4L);
        if (pieces != null) {
            pieces.combine(params.grad(), b.lo(), b.length());
            works[b.index()] = pg.allReduceAsync(params.grad(), b.lo(), b.length(), ReduceOp.AVG, OrderedAllReduce.INSTANCE);
        } else works[b.index()] = options.gradWire() == GradWire.BF16
                ? pg.allReduceBf16WireAsync(MemorySegment.ofArray(params.grad()).asSlice((long) b.lo() * Float.BYTES,
                (long) b.length() * Float.BYTES), b.length(), ReduceOp.AVG)
                : pg.allReduceAsync(params.grad(), b.lo(), b.length(), ReduceOp.AVG);
        works[b.index()].future().whenComplete((v, e) -> trace.end("allreduce bucket " + b.index()));
    }

    @Override public int rank() { return pg.rank(); }

    @Override public int worldSize() { return pg.size(); }

    @Override public void zeroGrad() { params.zeroGrad(); }

    @Override public void beginMicroStep(boolean sync) { this.sync = sync; }

    @Override public boolean ordered() { return pieces != null; }

    @Override
    public void beginPiece(int piece, int of) {
        if (pieces == null) DataParallel.super.beginPiece(piece, of);
        else pieces.begin(piece, of, params.grad());
    }

    @Override
    public long finishGradients() {
        if (!sync) return 0;
        // Parameters that got no gradient this step (unused) never fire their hook: their buckets go now, in order.
        launches.launchRest();
        long t0 = System.nanoTime();
        for (Work w : works) w.waitFor();
        long waited = System.nanoTime() - t0;
        Arrays.fill(works, null);
        launches.reset();
        return waited;
    }

    @Override
    public float step(float lr, float maxNorm) {
        float norm = GradClip.globalNorm(params.grad()); // grads are identical on every rank now
        opt.step(lr, GradClip.coefficient(norm, maxNorm)); // clipping folded into the update's read of each gradient
        lastStepComm = 0;
        return norm;
    }

    @Override public float average(float value) { return ParameterSync.average(pg, value); }

    @Override public Means averageAsync(float... values) { return ParameterSync.averageAsync(pg, values); }

    @Override public long lastStepCommNanos() { return lastStepComm; }

    @Override
    public MemoryReport memory() { return MemoryReport.replicated(params, opt); }

    @Override public int stepCount() { return opt.stepCount(); }

    @Override
    public Stateful modelState() { return ReplicatedState.parameters(params, true); }

    @Override
    public Stateful optimizerState() {
        return ReplicatedState.optimizer(params, opt, true);
    }
}
