package dev.jtrain.parallel;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.Work;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.GradClip;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.VectorOps;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * ZeRO-sharded optimizer (Rajbhandari et al. 2020, stages 1 and 2; with AdamW, what DeepSpeed calls "DistAdam").
 *
 * <p>Layout: each gradient bucket (see {@link BucketPlan}) of L floats is split evenly into N shards of S = ⌈L/N⌉
 * (rounded to 16 floats; the tail is zero padding, never silently un-sharded); rank r owns shard r of every bucket,
 * a contiguous slice of that bucket, as FSDP shards each FlatParameter. The optimizer's state (AdamW: m and v)
 * exists only for owned shards, stepped through the {@link dev.jtrain.optim.Optimizer} interface.
 *
 * <p>Step sequence: gradients are reduce-scattered (AVG) per bucket, launched from the backward hooks in bucket order
 * (later layers first). {@link #step} waits for them in launch order — the earliest-launched, likeliest finished, first —
 * computes the global gradient norm with one all-reduce of S-sized partial sums, updates each bucket's owned shard and
 * immediately launches that bucket's all-gather of updated parameters, so later buckets' updates overlap earlier
 * buckets' all-gathers.
 *
 * <p>Stage 1 keeps the full gradient buffer (8 + 8/N B/param); stage 2 drops it and keeps only the reduced shard,
 * each parameter's transient gradient being copied into a pooled staging buffer by its hook (4 + 12/N B/param).
 * With gradient accumulation (noSync micro-steps) stage 2 keeps the per-parameter gradients until the last micro-step,
 * and so it does without overlap (they are staged bucket by bucket as the buckets go out, after backward).
 *
 * <p>Staging buffers (each the largest bucket's N + 1 shards) are double-buffered, as DeepSpeed's stage 2 alternates
 * two gradient buckets: one fills (or, in the step, holds a bucket's updated shard) while the other's collective is
 * on the wire. With a single buffer the first gradient of bucket b + 1 would wait for bucket b's reduce-scatter,
 * serialising backward and communication.
 *
 * <p>Hybrid sharding ({@link ShardScope#HOST}): N is the host's ranks; each reduced shard is all-reduced across the
 * hosts' ranks that own the same shard ({@link ShardGroups}), and the all-gathers stay within the host.
 */
public final class ZeroOptimizer implements DataParallel {
    /** Staging buffers allocated before a new one waits for the oldest in-flight collective (double buffering). */
    private static final int STAGING_BUFFERS = 2;

    private record Piece(int flatOff, int shardOff, int length, boolean decay, int slot) {}

    private record InFlight(Work work, float[] buffer, int bucket, boolean reduceScatter) {}

    private final FlatParameters params;
    /** The whole job, and the groups sharded across (reduce-scatters, all-gathers, the norm) and replicated across. */
    private final ProcessGroup job, pg;
    private final ShardGroups groups;
    private final DataParallelOptions options;
    private final int stage;
    private final BucketPlan plan;
    private final int world;
    private final int rank;
    private final int[] shardSize;
    private final int[] stateBase;
    private final List<List<Piece>> pieces = new ArrayList<>();
    private final float[][] gradShard; // stage 2 only
    /** The optimizer's state for the owned shards only, one buffer per state name (AdamW: m and v). */
    private final float[][] state;
    private final BucketLaunches launches;
    private final float[][] bucketBuffer;
    private final ArrayDeque<float[]> free = new ArrayDeque<>();
    private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
    private final int stagingFloats;
    private final CommTrace trace;
    private int staged;
    private boolean sync = true;
    private int step;
    private long lastStepComm;

    public ZeroOptimizer(FlatParameters params, ProcessGroup pg, DataParallelOptions options, CommTrace trace) {
        if (options.zeroStage() < 1) throw new IllegalArgumentException("ZeroOptimizer needs zeroStage 1 or 2, got " + options.zeroStage());
        this.params = params;
        this.job = pg;
        this.options = options;
        this.stage = options.zeroStage();
        this.trace = trace == null ? CommTrace.NONE : trace;
        this.groups = ShardGroups.join(params, pg, options.shardWithin());
        this.pg = groups.shard();
        this.world = this.pg.size();
        this.rank = this.pg.rank();
        this.plan = new BucketPlan(params, options.firstBucketBytes(), options.bucketBytesFor(job));
        int nb = plan.buckets().size();
        shardSize = new int[nb];
        stateBase = new int[nb];
        int total = 0, maxPadded = 0;
        var slots = params.slots();
        for (BucketPlan.Bucket b : plan.buckets()) {
            int s = (b.length() + world - 1) / world;
            s = (s + 15) / 16 * 16;
            shardSize[b.index()] = s;
            stateBase[b.index()] = total;
            total += s;
            maxPadded = Math.max(maxPadded, s * (world + 1));
            int own0 = b.lo() + rank * s, own1 = Math.min(b.hi(), own0 + s);
            List<Piece> list = new ArrayList<>();
            for (int i = b.firstSlot(); i <= b.lastSlot(); i++) {
                var sl = slots.get(i);
                int a = Math.max(own0, sl.offset()), z = Math.min(own1, sl.offset() + sl.numel());
                if (a < z) list.add(new Piece(a, a - own0, z - a, sl.param().dim() >= 2, i));
            }
            pieces.add(list);
        }
        state = options.optimizer().newState(total);
        stagingFloats = maxPadded; // [0, N·S) reduce-scatter input / all-gather output, [N·S, (N+1)·S) shard output
        gradShard = stage == 2 ? new float[nb][] : null;
        if (stage == 2) {
            for (int b = 0; b < nb; b++) gradShard[b] = new float[shardSize[b]];
            params.dropGradientBuffer();
        }
        bucketBuffer = new float[nb][];
        launches = new BucketLaunches(plan, this::launch);
        for (int s = 0; s < slots.size(); s++) {
            final int slot = s;
            slots.get(s).param().registerPostAccumulateGradHook(t -> onGradReady(slot, t));
        }
    }

    public BucketPlan plan() { return plan; }

    private void onGradReady(int slot, Tensor param) {
        if (!sync) return;
        int b = plan.bucketOf(slot);
        if (stage == 2 && options.overlap()) { // without overlap the gradient stays until its bucket goes out
            BucketPlan.Bucket bk = plan.buckets().get(b);
            if (bucketBuffer[b] == null) bucketBuffer[b] = acquire();
            var sl = params.slots().get(slot);
            Tensor g = param.grad();
            System.arraycopy(g.data(), g.offset(), bucketBuffer[b], sl.offset() - bk.lo(), sl.numel());
            param.setGrad(null); // the full gradient is not kept: that is stage 2's saving
        }
        launches.gradientReady(slot, options.overlap());
    }

    private void launch(BucketPlan.Bucket b) {
        int s = shardSize[b.index()];
        if (stage == 2) stageRemainingGradients(b); // all of them without overlap; else those of unused parameters
        float[] buf = bucketBuffer[b.index()];
        if (buf == null) { // stage 1: the bucket's gradients are in the flat buffer
            buf = acquire();
            if (stage == 1) System.arraycopy(params.grad(), b.lo(), buf, 0, b.length());
        }
        bucketBuffer[b.index()] = null;
        MemorySegment all = MemorySegment.ofArray(buf);
        MemorySegment in = all.asSlice(0, (long) world * s * Float.BYTES);
        MemorySegment out = stage == 2 ? MemorySegment.ofArray(gradShard[b.index()])
                : all.asSlice((long) world * s * Float.BYTES, (long) s * Float.BYTES);
        String name = "reduce_scatter bucket " + b.index();
        trace.begin(name, (long) world * s * Float.BYTES);
        Work w = groups.reduceScatterAverage(in, out, s, options.gradWire());
        w.future().whenComplete((x, e) -> trace.end(name));
        inFlight.add(new InFlight(w, buf, b.index(), true));
    }

    /**
     * A zeroed staging buffer: a free one, else a new one while fewer than {@link #STAGING_BUFFERS} exist, else the
     * oldest in-flight one once its collective is done (or a new one if nothing is in flight: buckets filling at once).
     */
    private float[] acquire() {
        float[] buf = free.poll();
        if (buf == null && !inFlight.isEmpty() && staged >= STAGING_BUFFERS) {
            complete(inFlight.poll());
            buf = free.poll();
        }
        if (buf == null) {
            buf = new float[stagingFloats];
            staged++;
        }
        Arrays.fill(buf, 0f);
        return buf;
    }

    /** Waits for one collective and finishes it: copies its result where it belongs, returns its buffer. */
    private long complete(InFlight f) {
        long t0 = System.nanoTime();
        f.work().waitFor();
        long waited = System.nanoTime() - t0;
        BucketPlan.Bucket b = plan.buckets().get(f.bucket());
        int s = shardSize[f.bucket()];
        if (f.reduceScatter()) {
            if (stage == 1) { // reduced shard back into the flat gradient buffer, only the real (unpadded) part
                int own0 = b.lo() + rank * s, len = Math.max(0, Math.min(b.hi(), own0 + s) - own0);
                if (len > 0) System.arraycopy(f.buffer(), world * s, params.grad(), own0, len); // last ranks may own only padding
            }
        } else {
            System.arraycopy(f.buffer(), 0, params.data(), b.lo(), b.length());
        }
        free.push(f.buffer());
        return waited;
    }

    /** This rank in the job (under hybrid sharding its shard index is its rank within the host). */
    @Override public int rank() { return job.rank(); }

    @Override public int worldSize() { return job.size(); }

    @Override
    public void zeroGrad() {
        if (stage == 1) params.zeroGrad();
        else {
            params.zeroGrad();
            for (float[] g : gradShard) Arrays.fill(g, 0f);
        }
    }

    @Override public void beginMicroStep(boolean sync) { this.sync = sync; }

    @Override
    public long finishGradients() {
        if (!sync) return 0;
        launches.launchRest(); // stage 2 stages what is left as each bucket goes out (launch)
        long waited = 0;
        while (!inFlight.isEmpty()) waited += complete(inFlight.poll());
        launches.reset();
        return waited;
    }

    /**
     * Stage 2, as bucket {@code b} goes out: the gradients its hooks did not stage (no overlap, or parameters that got
     * no gradient in this micro-step) are staged now; parameters with none at all stay zero.
     */
    private void stageRemainingGradients(BucketPlan.Bucket b) {
        if (bucketBuffer[b.index()] == null) bucketBuffer[b.index()] = acquire();
        for (int i = b.firstSlot(); i <= b.lastSlot(); i++) {
            var sl = params.slots().get(i);
            Tensor g = sl.param().grad();
            if (g != null) {
                System.arraycopy(g.data(), g.offset(), bucketBuffer[b.index()], sl.offset() - b.lo(), sl.numel());
                sl.param().setGrad(null);
            }
        }
    }

    private float[] gradOf(int bucket) {
        return stage == 2 ? gradShard[bucket] : params.grad();
    }

    private int gradOffset(Piece p) {
        return stage == 2 ? p.shardOff() : p.flatOff();
    }

    @Override
    public float step(float lr, float maxNorm) {
        step++;
        long comm = 0;
        double[] sq = {0};
        for (int b = 0; b < pieces.size(); b++)
            for (Piece p : pieces.get(b)) sq[0] += VectorOps.sumSquares(gradOf(b), gradOffset(p), p.length());
        long t0 = System.nanoTime();
        pg.allReduce(MemorySegment.ofArray(sq), 1, DType.FLOAT64, ReduceOp.SUM);
        comm += System.nanoTime() - t0;
        float norm = (float) Math.sqrt(sq[0]);
        float scale = GradClip.coefficient(norm, maxNorm);
        var bs = plan.buckets();
        for (int b = 0; b < bs.size(); b++) {
            float[] g = gradOf(b);
            for (Piece p : pieces.get(b)) {
                int st = stateBase[b] + p.shardOff();
                options.optimizer().step(params.data(), p.flatOff(), g, gradOffset(p), state, st, p.length(), lr, p.decay(), step, scale);
            }
            launchAllGather(bs.get(b));
        }
        while (!inFlight.isEmpty()) comm += complete(inFlight.poll());
        lastStepComm = comm;
        return norm;
    }

    private void launchAllGather(BucketPlan.Bucket b) {
        int s = shardSize[b.index()];
        float[] buf = acquire();
        int own0 = b.lo() + rank * s, len = Math.max(0, Math.min(b.hi(), own0 + s) - own0);
        if (len > 0) System.arraycopy(params.data(), own0, buf, world * s, len); // input after the output region, zero-padded
        MemorySegment all = MemorySegment.ofArray(buf);
        MemorySegment in = all.asSlice((long) world * s * Float.BYTES, (long) s * Float.BYTES);
        String name = "all_gather bucket " + b.index();
        trace.begin(name, (long) world * s * Float.BYTES);
        Work w = pg.allGatherAsync(in, all.asSlice(0, (long) world * s * Float.BYTES), s, DType.FLOAT32);
        w.future().whenComplete((x, e) -> trace.end(name));
        inFlight.add(new InFlight(w, buf, b.index(), false));
    }

    @Override public float average(float value) { return ParameterSync.average(job, value); }

    @Override public Means averageAsync(float... values) { return ParameterSync.averageAsync(job, values); }

    /** Closes the host and rail groups hybrid sharding made (the job's group stays the caller's). */
    @Override public void close() { groups.close(); }

    @Override public long lastStepCommNanos() { return lastStepComm; }

    @Override
    public MemoryReport memory() {
        long p = params.parameterCount();
        long owned = state.length == 0 ? 0 : state[0].length, stateBytes = 0;
        for (float[] s : state) stateBytes += 4L * s.length;
        long grads = stage == 1 ? 4L * params.size() : 4L * owned;
        return new MemoryReport(p, 4L * params.size(), grads, stateBytes, 4L * staged * stagingFloats);
    }

    @Override public int stepCount() { return step; }

    public int stage() { return stage; }

    @Override
    public Stateful modelState() { return ReplicatedState.parameters(params, true); }

    /** Each owned piece of each state buffer as a flat range of its parameter's tensor (names shared with DDP's full state). */
    @Override
    public Stateful optimizerState() {
        return new Stateful() {
            @Override
            public List<TensorShard> shards() {
                List<TensorShard> out = new ArrayList<>();
                for (int b = 0; b < pieces.size(); b++)
                    for (Piece p : pieces.get(b)) {
                        var sl = params.slots().get(p.slot());
                        long[] shape = ReplicatedState.shape(sl);
                        int st = stateBase[b] + p.shardOff();
                        List<String> names = options.optimizer().stateNames();
                        for (int k = 0; k < names.size(); k++) {
                            out.add(new TensorShard(ReplicatedState.stateName(names.get(k), sl.name()), shape, p.flatOff() - sl.offset(),
                                    state[k], st, p.length(), groups.replicated()));
                        }
                    }
                return out;
            }

            @Override
            public Map<String, String> metadata() { return Map.of(ReplicatedState.STEP_KEY, Integer.toString(step)); }

            @Override
            public void restore(Map<String, String> metadata) { step = Integer.parseInt(metadata.getOrDefault(ReplicatedState.STEP_KEY, "0")); }
        };
    }
}
