package dev.jtrain.parallel;

import dev.jtrain.autograd.GradMode;
import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.Work;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.nn.ShardedModel;
import dev.jtrain.nn.UnitHooks;
import dev.jtrain.optim.GradClip;
import dev.jtrain.optim.Optimizer;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.VectorOps;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * ZeRO stage 3 (Rajbhandari et al. 2020) the way PyTorch's FSDP builds it (Zhao et al. 2023): parameters, gradients
 * and optimizer state are all sharded, 16·Ψ/N bytes per rank, plus the full parameters of the units being used.
 *
 * <p>Units are the model's {@link ShardedModel#units()} (transformer blocks) and the root (the parameters in no unit:
 * embeddings, the tied head, the final norm). A unit's parameters are laid out flat, each 16-float aligned, and cut
 * into N shards of S = ⌈L/N⌉ floats (rounded up to 16; the tail is zero padding). Rank r keeps shard r of the unit's
 * parameters, of its gradients and of its optimizer state, and nothing else between uses.
 *
 * <p>Forward: {@code beforeForward(u)} waits for u's all-gather (prefetched while u - 1 ran, or launched now) and
 * prefetches u + 1; {@code afterForward(u)} frees u's full parameters (FSDP's reshard after forward). Backward: the
 * marker at u's output gathers u again, prefetching u - 1, and points u's parameters' gradients into one unit buffer;
 * the marker at u's input, which runs after every gradient of the unit has been accumulated, launches the
 * reduce-scatter (AVG) of that buffer and frees the parameters. So at most two units are gathered at a time: the one
 * running and the one prefetched. A reduced shard is added into the gradient shard when its collective completes,
 * which sums gradient-accumulation micro-steps in the shard: every micro-step is reduced (FSDP without no_sync, which
 * would keep full gradients instead). The root is gathered at the first forward of a step and stays so until the
 * optimizer step; its gradients accumulate in full and are reduce-scattered once, by {@link #finishGradients}.
 *
 * <p>Step: the global gradient norm from the shards (one all-reduce of partial sums of squares), clipping, then the
 * {@link Optimizer} on every owned shard, in unit order. Nothing is gathered after the step; the next forward gathers
 * what it uses.
 *
 * <p>Hybrid sharding ({@link ShardScope#HOST}, FSDP's HYBRID_SHARD): N above is the host's ranks. Units are gathered
 * from the host only, and each reduced shard is all-reduced across the ranks that hold it on the other hosts
 * ({@link ShardGroups}), so a host keeps a full replica, 16·Ψ/N bytes per rank with N ranks per host.
 *
 * <p>Threading: the training thread only; collectives run on the process group's thread.
 */
public final class FullyShardedDataParallel implements DataParallel {
    /** Where a resharded parameter points: any read of it fails at once instead of reading stale values. */
    private static final float[] RESHARDED = new float[0];

    private record Piece(int slot, int inParam, int inShard, int length, boolean decay) {}

    /** @param total the reduced shard is the unit's whole gradient (accumulated micro-steps included), not an addend */
    private record Pending(Work work, float[] buffer, Unit unit, boolean total) {}

    /** One unit's layout, shards and (while in use) gathered parameters and full gradient buffer. */
    private final class Unit {
        final int index;
        final List<FlatParameters.Slot> slots;
        final int[] at;
        final int shard;
        float[] param; // null once unshard() gathered the unit for good
        float[] grad;
        final List<Piece> pieces = new ArrayList<>();
        final int stateBase;
        float[] gathered, gathering;
        Work gather;
        float[] gradFull;
        /** Hybrid sharding: this step reduced some of u's gradient within the host only, not yet across hosts. */
        boolean hostOnly;

        Unit(int index, List<FlatParameters.Slot> slots, int stateBase) {
            this.index = index;
            this.slots = slots;
            this.stateBase = stateBase;
            at = new int[slots.size()];
            int len = 0;
            for (int i = 0; i < slots.size(); i++) {
                at[i] = len;
                len = align(len + slots.get(i).numel());
            }
            shard = align((len + world - 1) / world);
            param = new float[shard];
            int own0 = rank * shard, own1 = own0 + shard;
            for (int i = 0; i < slots.size(); i++) {
                FlatParameters.Slot s = slots.get(i);
                int a = Math.max(own0, at[i]), z = Math.min(own1, at[i] + s.numel());
                if (a >= z) continue;
                pieces.add(new Piece(i, a - at[i], a - own0, z - a, s.param().dim() >= 2));
                Tensor t = s.param(); // wherever it lives: one flat buffer, or its own storage (FlatParameters.layoutOf)
                System.arraycopy(t.data(), t.offset() + a - at[i], param, a - own0, z - a);
            }
            // the unit's full parameters go as soon as its shard is taken: building the shards never needs more than
            // the model as built plus one unit's shard (when each parameter has its own storage)
            for (FlatParameters.Slot s : slots) s.param().pointAt(RESHARDED, 0);
        }

        /** Floats of a gather buffer: the full unit, N·S, this rank's shard gathered in place at r·S. */
        int gatherFloats() {
            return world * shard;
        }

        /** Floats of a reduce-scatter buffer: N·S for the full unit's gradient, then S for the reduced shard. */
        int reduceFloats() {
            return (world + 1) * shard;
        }

        String name() {
            return index == UnitHooks.ROOT ? "root" : "unit " + index;
        }
    }

    private final FlatParameters params;
    private final ShardedModel model;
    /** The whole job, and the groups sharded across (gathers, reduce-scatters, the norm) and replicated across. */
    private final ProcessGroup job, pg;
    private final ShardGroups groups;
    private final DataParallelOptions options;
    private final CommTrace trace;
    private final int world, rank;
    private final List<Unit> units = new ArrayList<>();
    private final Unit root;
    private final float[][] state; // its buffers go (null) when unshard() ends training
    private final Map<Integer, ArrayDeque<float[]>> free = new HashMap<>();
    /** Buffers made per size; up to two before one waits for the oldest reduce-scatter (double buffering). */
    private final Map<Integer, Integer> made = new HashMap<>();
    private final ArrayDeque<Pending> inFlight = new ArrayDeque<>();
    private long pooledBytes;
    private int gatheredUnits, maxGatheredUnits;
    private final List<Integer> gatherOrder = new ArrayList<>();
    private int step;
    private long lastStepComm, exposed;
    private boolean unsharded;
    /** The micro-step running is the optimizer step's last (the trainer's sync flag). */
    private boolean lastMicroStep = true;

    public FullyShardedDataParallel(FlatParameters params, ShardedModel model, ProcessGroup pg, DataParallelOptions options,
                                    CommTrace trace) {
        if (options.zeroStage() != 3) throw new IllegalArgumentException("FullyShardedDataParallel is ZeRO stage 3, got stage " + options.zeroStage());
        this.params = params;
        this.model = model;
        this.job = pg;
        this.options = options;
        this.trace = trace == null ? CommTrace.NONE : trace;
        this.groups = ShardGroups.join(params, pg, options.shardWithin());
        this.pg = groups.shard();
        this.world = this.pg.size();
        this.rank = this.pg.rank();

        Map<Tensor, FlatParameters.Slot> slotOf = new IdentityHashMap<>();
        for (FlatParameters.Slot s : params.slots()) slotOf.put(s.param(), s);
        Map<Tensor, Integer> unitOf = new IdentityHashMap<>();
        List<List<Tensor>> declared = model.units();
        for (int u = 0; u < declared.size(); u++) {
            if (declared.get(u).isEmpty()) throw new IllegalArgumentException("ZeRO-3: unit " + u + " of the model has no parameters");
            for (Tensor t : declared.get(u)) {
                if (!slotOf.containsKey(t)) throw new IllegalArgumentException("ZeRO-3: unit " + u + " lists a tensor that is not a parameter of the model: " + t);
                Integer prev = unitOf.put(t, u);
                if (prev != null) throw new IllegalArgumentException("ZeRO-3: parameter " + slotOf.get(t).name() + " is in units " + prev + " and " + u
                        + "; a parameter used by several units (a tied weight) belongs in the root");
            }
        }
        List<List<FlatParameters.Slot>> members = new ArrayList<>();
        for (int u = 0; u < declared.size(); u++) members.add(new ArrayList<>());
        List<FlatParameters.Slot> rootSlots = new ArrayList<>();
        for (FlatParameters.Slot s : params.slots()) {
            Integer u = unitOf.get(s.param());
            (u == null ? rootSlots : members.get(u)).add(s);
        }
        int base = 0;
        for (int u = 0; u < members.size(); u++) {
            Unit unit = new Unit(u, List.copyOf(members.get(u)), base);
            units.add(unit);
            base += unit.shard;
        }
        root = new Unit(UnitHooks.ROOT, List.copyOf(rootSlots), base);
        base += root.shard;
        // the full parameters are gone before anything else is allocated, so a rank never holds them and its state
        params.dropBuffers();
        for (Unit u : allUnits()) u.grad = new float[u.shard];
        state = options.optimizer().newState(base);
        model.setUnitHooks(new Hooks());
    }

    private static int align(int n) {
        return (n + FlatParameters.ALIGN_FLOATS - 1) / FlatParameters.ALIGN_FLOATS * FlatParameters.ALIGN_FLOATS;
    }

    private Unit unit(int index) {
        return index == UnitHooks.ROOT ? root : units.get(index);
    }

    private final class Hooks implements UnitHooks {
        @Override
        public void beforeForward(int index) {
            Unit u = unit(index);
            exposed += gathered(u);
            if (index == ROOT) {
                if (GradMode.isEnabled() && root.gradFull == null) pointGradients(root);
                if (!units.isEmpty()) launchGather(units.getFirst());
            } else if (index + 1 < units.size()) {
                launchGather(units.get(index + 1));
            }
        }

        @Override
        public void afterForward(int index) {
            if (index != ROOT) reshard(unit(index));
        }

        @Override
        public void beforeBackward(int index) {
            Unit u = unit(index);
            exposed += gathered(u);
            if (index > 0) launchGather(units.get(index - 1));
            pointGradients(u);
        }

        @Override
        public void afterBackward(int index) {
            Unit u = unit(index);
            launchReduceScatter(u);
            reshard(u);
        }
    }

    /** Launches u's all-gather unless it is gathered or on its way (a prefetch). */
    private void launchGather(Unit u) {
        if (u.gathered != null || u.gathering != null || u.slots.isEmpty()) return;
        float[] buf = take(u.gatherFloats());
        System.arraycopy(u.param, 0, buf, rank * u.shard, u.shard);
        MemorySegment all = MemorySegment.ofArray(buf);
        String name = "all_gather " + u.name();
        trace.begin(name, 4L * world * u.shard);
        u.gather = pg.allGatherAsync(all.asSlice(4L * rank * u.shard, 4L * u.shard), all, u.shard, DType.FLOAT32);
        u.gather.future().whenComplete((x, e) -> trace.end(name));
        u.gathering = buf;
        if (u != root) {
            gatheredUnits++;
            maxGatheredUnits = Math.max(maxGatheredUnits, gatheredUnits);
            gatherOrder.add(u.index);
        }
    }

    /** Makes u's parameters point at its full values, waiting for its all-gather; returns nanoseconds waited. */
    private long gathered(Unit u) {
        if (unsharded || u.gathered != null || u.slots.isEmpty()) return 0;
        launchGather(u);
        long t0 = System.nanoTime();
        u.gather.waitFor();
        long waited = System.nanoTime() - t0;
        u.gathered = u.gathering;
        u.gathering = null;
        u.gather = null;
        for (int i = 0; i < u.slots.size(); i++) u.slots.get(i).param().pointAt(u.gathered, u.at[i]);
        return waited;
    }

    /**
     * A gather prefetched for a unit that then did not run (a branch not taken) would hand the next step parameters
     * from before this step's update: it is waited for (every rank issued it) and dropped. Returns nanoseconds waited.
     */
    private long dropPrefetch(Unit u) {
        if (u.gathering == null) return 0;
        long t0 = System.nanoTime();
        u.gather.waitFor();
        give(u.gathering);
        u.gathering = null;
        u.gather = null;
        gatheredUnits--;
        return System.nanoTime() - t0;
    }

    private void reshard(Unit u) {
        if (unsharded || u.gathered == null) return;
        for (FlatParameters.Slot s : u.slots) s.param().pointAt(RESHARDED, 0);
        give(u.gathered);
        u.gathered = null;
        if (u != root) gatheredUnits--;
    }

    /** Gives u's parameters gradient views into one zeroed unit buffer, which autograd accumulates into. */
    private void pointGradients(Unit u) {
        if (u.gradFull != null || u.slots.isEmpty()) return;
        u.gradFull = take(u.reduceFloats());
        Arrays.fill(u.gradFull, 0, world * u.shard, 0f);
        for (int i = 0; i < u.slots.size(); i++) {
            Tensor p = u.slots.get(i).param();
            p.setGrad(Tensor.view(u.gradFull, u.at[i], p.shape()));
        }
    }

    private void launchReduceScatter(Unit u) {
        if (u.gradFull == null) return;
        for (FlatParameters.Slot s : u.slots) s.param().setGrad(null);
        float[] buf = u.gradFull;
        u.gradFull = null;
        MemorySegment all = MemorySegment.ofArray(buf);
        MemorySegment in = all.asSlice(0, 4L * world * u.shard), out = all.asSlice(4L * world * u.shard, 4L * u.shard);
        String name = "reduce_scatter " + u.name();
        trace.begin(name, 4L * world * u.shard);
        // Hybrid sharding: the hosts' replicas are averaged once per optimizer step, on the last micro-step (and for the
        // root, reduced once anyway). Earlier micro-steps' host averages of u are in u.grad by then, added to the
        // reduced shard before it crosses the hosts.
        boolean acrossHosts = groups.replicated() && (u == root || lastMicroStep);
        if (acrossHosts) completeEarlierOf(u);
        Work w = acrossHosts
                ? groups.reduceScatterAverage(in, out, u.shard, options.gradWire(),
                        () -> VectorOps.addOnCallingThread(buf, world * u.shard, u.grad, 0, buf, world * u.shard, u.shard))
                : groups.reduceScatterWithinShardGroup(in, out, u.shard, options.gradWire());
        u.hostOnly = groups.replicated() && !acrossHosts;
        w.future().whenComplete((x, e) -> trace.end(name));
        inFlight.add(new Pending(w, buf, u, acrossHosts));
    }

    /** Completes the in-flight reduce-scatters up to the last one of {@code u}, so u.grad holds them all. */
    private void completeEarlierOf(Unit u) {
        boolean any = false;
        for (Pending p : inFlight) any |= p.unit() == u;
        while (any) {
            Pending p = inFlight.poll();
            exposed += complete(p);
            any = false;
            for (Pending q : inFlight) any |= q.unit() == u;
        }
    }

    /** Waits for one reduce-scatter and adds its shard into the unit's gradient shard; returns nanoseconds waited. */
    private long complete(Pending p) {
        long t0 = System.nanoTime();
        p.work().waitFor();
        long waited = System.nanoTime() - t0;
        Unit u = p.unit();
        if (p.total()) System.arraycopy(p.buffer(), world * u.shard, u.grad, 0, u.shard);
        else VectorOps.add(u.grad, 0, p.buffer(), world * u.shard, u.grad, 0, u.shard);
        give(p.buffer());
        return waited;
    }

    /**
     * A buffer of n floats (contents unspecified): a free one, a new one while fewer than two of that size exist, else
     * the one the oldest reduce-scatter returns when done. Two, so that a unit's backward fills one while the unit
     * after it is reduce-scattered from the other; with one, each unit's backward waited for the previous unit's
     * reduce-scatter to finish, and computing and communicating took turns.
     */
    private float[] take(int n) {
        ArrayDeque<float[]> q = free.get(n);
        if ((q == null || q.isEmpty()) && made.getOrDefault(n, 0) >= 2 && !inFlight.isEmpty() && inFlight.peek().buffer().length == n) {
            exposed += complete(inFlight.poll());
            q = free.get(n);
        }
        float[] buf = q == null ? null : q.poll();
        if (buf == null) {
            buf = new float[n];
            made.merge(n, 1, Integer::sum);
            pooledBytes += 4L * n;
        }
        return buf;
    }

    private void give(float[] buf) {
        free.computeIfAbsent(buf.length, k -> new ArrayDeque<>()).push(buf);
    }

    /** This rank in the job (under hybrid sharding its shard index is its rank within the host). */
    @Override public int rank() { return job.rank(); }

    /** Ranks in the job (under hybrid sharding each holds 1/N of a host's replica, N the ranks per host). */
    @Override public int worldSize() { return job.size(); }

    @Override
    public void zeroGrad() {
        for (Unit u : units) Arrays.fill(u.grad, 0f);
        Arrays.fill(root.grad, 0f);
        exposed = 0;
    }

    /**
     * Every micro-step is reduced (see the class comment); {@code sync} marks the last, on which hybrid sharding
     * averages the accumulated shards across hosts.
     */
    @Override public void beginMicroStep(boolean sync) { lastMicroStep = sync; }

    @Override
    public long finishGradients() {
        for (Unit u : units) { // a unit whose input marker never ran (an input that needs no gradient)
            launchReduceScatter(u);
            reshard(u);
            exposed += dropPrefetch(u);
        }
        launchReduceScatter(root);
        long waited = exposed;
        while (!inFlight.isEmpty()) waited += complete(inFlight.poll());
        // A unit whose backward ran in an earlier micro-step but not in the last (a branch not taken) has reduced only
        // within its host: its hosts' averages are averaged now, in unit order on every rank, after every chained
        // all-reduce above has been issued and completed.
        for (Unit u : units) {
            if (!u.hostOnly) continue;
            long t0 = System.nanoTime();
            groups.averageAcrossHosts(u.grad, u.shard, options.gradWire());
            waited += System.nanoTime() - t0;
            u.hostOnly = false;
        }
        exposed = 0;
        return waited;
    }

    @Override
    public float step(float lr, float maxNorm) {
        if (unsharded) throw new IllegalStateException("ZeRO-3 parameters were unsharded for inference (and the optimizer state freed); training cannot continue");
        step++;
        double[] sq = {0};
        for (Unit u : allUnits())
            for (Piece p : u.pieces) sq[0] += VectorOps.sumSquares(u.grad, p.inShard(), p.length());
        long t0 = System.nanoTime();
        pg.allReduce(MemorySegment.ofArray(sq), 1, DType.FLOAT64, ReduceOp.SUM);
        lastStepComm = System.nanoTime() - t0;
        float norm = (float) Math.sqrt(sq[0]);
        float scale = GradClip.coefficient(norm, maxNorm);
        Optimizer opt = options.optimizer();
        for (Unit u : allUnits()) {
            for (Piece p : u.pieces) {
                opt.step(u.param, p.inShard(), u.grad, p.inShard(), state, u.stateBase + p.inShard(), p.length(), lr, p.decay(), step, scale);
            }
        }
        reshard(root); // its shard moved on; the next forward gathers it again
        return norm;
    }

    private List<Unit> allUnits() {
        List<Unit> all = new ArrayList<>(units);
        all.add(root);
        return all;
    }

    /**
     * After training: every rank gathers every unit for good and the hooks come off, so the model runs alone again
     * (sampling, saving weights). Collective; training cannot continue afterwards.
     */
    @Override
    public void unshard() {
        if (unsharded) return;
        while (!inFlight.isEmpty()) complete(inFlight.poll());
        // training is over: its state goes first, so that the full parameters fit where it was
        for (int k = 0; k < state.length; k++) state[k] = null;
        for (Unit u : allUnits()) u.grad = null;
        free.clear();
        made.clear();
        for (Unit u : allUnits()) {
            gathered(u);
            u.param = null; // the gathered unit holds it: the model then takes 4 B/param, not 4 + 4/N
        }
        model.setUnitHooks(null);
        unsharded = true;
    }

    @Override public float average(float value) { return ParameterSync.average(job, value); }

    @Override public Means averageAsync(float... values) { return ParameterSync.averageAsync(job, values); }

    /** Closes the host and rail groups hybrid sharding made (the job's group stays the caller's). */
    @Override public void close() { groups.close(); }

    @Override public long lastStepCommNanos() { return lastStepComm; }

    @Override
    public MemoryReport memory() {
        requireSharded("memory");
        long shards = 0;
        for (Unit u : allUnits()) shards += u.shard;
        long stateBytes = 0;
        for (float[] s : state) stateBytes += 4L * s.length;
        return new MemoryReport(params.parameterCount(), 4L * shards, 4L * shards, stateBytes, pooledBytes);
    }

    /** The most block units gathered (or being gathered) at once so far: at most two with prefetch. */
    public int maxGatheredUnits() { return maxGatheredUnits; }

    /** Units in the order their all-gathers were launched, since construction. */
    public List<Integer> gatherOrder() { return List.copyOf(gatherOrder); }

    private void requireSharded(String what) {
        if (unsharded) throw new IllegalStateException("ZeRO-3 " + what + ": the shards and optimizer state were dropped by unshard(), "
                + "which ends training; ask before it");
    }

    /** Units, root excluded. */
    public int unitCount() { return units.size(); }

    /** The full parameters in the flat layout of the {@link FlatParameters} this was built on, gathered (collective). */
    public float[] gatherParameters() {
        requireSharded("gatherParameters");
        float[] flat = new float[params.size()];
        for (Unit u : allUnits()) {
            float[] full = new float[world * u.shard];
            pg.allGather(MemorySegment.ofArray(u.param), MemorySegment.ofArray(full), u.shard, DType.FLOAT32);
            for (int i = 0; i < u.slots.size(); i++) {
                FlatParameters.Slot s = u.slots.get(i);
                System.arraycopy(full, u.at[i], flat, s.offset(), s.numel());
            }
        }
        return flat;
    }

    @Override public int stepCount() { return step; }

    /**
     * Each owned piece of each parameter: ZeRO-3 checkpoints reshard into any strategy and world size. Under hybrid
     * sharding the pieces are marked replicated, so the hosts share the writing of each once.
     */
    @Override
    public Stateful modelState() {
        return new ShardState(false);
    }

    @Override
    public Stateful optimizerState() {
        return new ShardState(true);
    }

    /** The owned pieces of the parameters, or of every optimizer state buffer, as flat ranges of the logical tensors. */
    private final class ShardState implements Stateful {
        private final boolean optimizer;

        ShardState(boolean optimizer) {
            this.optimizer = optimizer;
        }

        @Override
        public List<TensorShard> shards() {
            requireSharded("checkpoint state");
            List<TensorShard> out = new ArrayList<>();
            List<String> names = options.optimizer().stateNames();
            for (Unit u : allUnits()) {
                for (Piece p : u.pieces) {
                    FlatParameters.Slot s = u.slots.get(p.slot());
                    long[] shape = ReplicatedState.shape(s);
                    if (!optimizer) {
                        out.add(new TensorShard(s.name(), shape, p.inParam(), u.param, p.inShard(), p.length(), groups.replicated()));
                        continue;
                    }
                    for (int k = 0; k < names.size(); k++)
                        out.add(new TensorShard(ReplicatedState.stateName(names.get(k), s.name()), shape, p.inParam(), state[k],
                                u.stateBase + p.inShard(), p.length(), groups.replicated()));
                }
            }
            return out;
        }

        @Override
        public Map<String, String> metadata() {
            return optimizer ? Map.of(ReplicatedState.STEP_KEY, Integer.toString(step)) : Map.of();
        }

        @Override
        public void restore(Map<String, String> metadata) {
            if (optimizer) step = Integer.parseInt(metadata.getOrDefault(ReplicatedState.STEP_KEY, "0"));
            else reshard(root); // loaded shards replace what a gathered root still shows
        }
    }
}
