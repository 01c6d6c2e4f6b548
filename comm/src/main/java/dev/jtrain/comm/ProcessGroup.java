package dev.jtrain.comm;

import dev.jtrain.comm.algo.Algorithm;
import dev.jtrain.comm.algo.AlgorithmSelector;
import dev.jtrain.comm.algo.AllGatherAlgorithm;
import dev.jtrain.comm.algo.AllReduceAlgorithm;
import dev.jtrain.comm.algo.AllToAllAlgorithm;
import dev.jtrain.comm.algo.BarrierAlgorithm;
import dev.jtrain.comm.algo.BinomialBroadcast;
import dev.jtrain.comm.algo.BroadcastAlgorithm;
import dev.jtrain.comm.algo.Collective;
import dev.jtrain.comm.algo.CollectiveContext;
import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.algo.CostModelProbe;
import dev.jtrain.comm.algo.Fabric;
import dev.jtrain.comm.algo.GatherAlgorithm;
import dev.jtrain.comm.algo.ReduceAlgorithm;
import dev.jtrain.comm.algo.ReduceKernels;
import dev.jtrain.comm.algo.ReduceScatterAlgorithm;
import dev.jtrain.comm.algo.ScatterAlgorithm;
import dev.jtrain.comm.topology.HostIdentity;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.topology.LinkClass;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.SegmentAccess;
import dev.jtrain.comm.transport.Transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A set of ranks that run collectives together — the counterpart of a torch.distributed process group.
 *
 * <p><b>Ordering.</b> Collectives must be issued in the same order on every rank of the group. Each async form
 * ({@code ...Async}) queues the operation on the group's single communication thread and returns at once; queued
 * collectives run one after another in issue order, so several may be in flight while the caller's thread does
 * other work (how training overlaps gradient all-reduce with backward). The blocking forms wait for everything
 * issued before them and then run on the caller's thread (saving two thread hand-offs per call, which dominate the
 * latency of small messages). Issue from one thread per rank, or order the issuing threads yourself.
 *
 * <p><b>Buffers.</b> Any {@link MemorySegment} (native, or heap via {@code MemorySegment.ofArray(float[])}), in
 * platform (little-endian) order; counts are in elements of the given {@link DType}. The caller must neither read nor
 * write a buffer until its {@link Work} completes. {@code JTRAIN_DEBUG=DETAIL} checks this for buffers up to 1 MiB and
 * exchanges a fingerprint of each collective (op, count, dtype, reduce op, root, sequence number) so that
 * mismatched calls fail with both sides' descriptions instead of hanging or corrupting data.
 *
 * <p><b>Failures.</b> A Work fails with {@link CommException} / {@link CommTimeoutException} naming rank, op,
 * sequence number and peer, within {@code timeoutMs}. After a collective failed, the group is unusable (ranks are out
 * of step) and later collectives fail fast; create a new group.
 *
 * <p><b>Point-to-point.</b> {@link #isend}/{@link #irecv} run on their own (virtual) threads, not the communication
 * thread, so they never wait behind collectives; operations with the same peer, tag and direction keep their order.
 * The contract of {@link #send}, {@link #recv} and their non-blocking forms (as MPI's, with one difference):
 * <ul>
 *   <li>Messages from one rank to another with the same tag arrive in send order (non-overtaking); a receive names
 *       its source, tag and exact byte length, and a length mismatch fails both sides' calls naming the ranks.</li>
 *   <li>A send returns once its buffer may be reused: when the receiver took the bytes into the posted receive, or
 *       into a buffer of its own if the message came before its receive was posted. Unlike MPI_Send past the eager
 *       limit, a blocking send does not need the matching receive to be posted: receivers buffer early messages, so a
 *       cycle of blocking sends (each rank sends to the next, then receives from the previous) completes at any world
 *       size over shared memory, TCP or both. That buffering is bounded per rank
 *       ({@code TransportOptions.maxUnexpectedBytes}, default 512 MiB): a message that does not fit waits in the link
 *       (the sender blocks) until its receive is posted. Code that posts receives first (irecv before send, or isend
 *       and irecv together) never needs the buffer and works at any message size.</li>
 *   <li>Each call fails within the group's timeout with a {@link CommTimeoutException}, and at once with a
 *       {@link CommException} when the peer's process is gone; both name this rank, the peer and the tag.</li>
 * </ul>
 *
 * <p>Threading: all methods are thread-safe. {@link #close} from any thread.
 */
public final class ProcessGroup implements AutoCloseable {
    private final Transport transport;
    private final boolean ownsTransport;
    private final int groupId;
    private final int[] worldRanks;
    private final ProcessGroupOptions options;
    private final long timeoutMs;
    private final AlgorithmSelector selector;
    private final GroupEngine engine;
    private final PointToPoint p2p;
    private final AtomicLong seq = new AtomicLong();
    private final AtomicInteger children = new AtomicInteger();
    private final String label;
    private volatile CostModel costModel;
    /** Per link class: measured at world-group start (or the options' model for both); sub-groups inherit them. */
    private volatile CostModel intraHostCost, interHostCost;
    private volatile CostModelProbe.LinkCosts measuredLinkCosts;
    private volatile HostTopology topology;
    /** Topology plus per-class figures, what the selector prices algorithms on; set once both are known. */
    private volatile Fabric fabric;
    private final List<AutoCloseable> alsoClose = new CopyOnWriteArrayList<>();
    /** Groups made by {@link #newGroup}: an abort reaches them too, since their work waits on the same peers. */
    private final List<ProcessGroup> subGroups = new CopyOnWriteArrayList<>();

    private ProcessGroup(Transport transport, boolean ownsTransport, int groupId, int[] worldRanks, ProcessGroupOptions options) {
        this.transport = transport;
        this.ownsTransport = ownsTransport;
        this.groupId = groupId;
        this.worldRanks = worldRanks;
        this.options = options;
        this.timeoutMs = options.timeoutMs() > 0 ? options.timeoutMs() : transport.timeoutMs();
        this.selector = new AlgorithmSelector(options.algorithms());
        this.label = "g" + groupId + "r" + transport.rank();
        this.engine = new GroupEngine(transport, TagSpace.collectiveBase(groupId), timeoutMs,
                options.chunkBytes() > 0 ? options.chunkBytes() : ProcessGroupOptions.DEFAULT_CHUNK_BYTES,
                options.debugDetail(), label);
        this.p2p = new PointToPoint(this, engine, transport, groupId);
        this.costModel = options.costModel();
        if (costModel != null) useChunk(costModel);
    }

    /** The chunk all ranks use: the explicit option, else the one in the (rank 0's, broadcast) cost model. */
    private void useChunk(CostModel m) {
        long chunk = options.chunkBytes() > 0 ? options.chunkBytes() : m.chunkBytes();
        engine.chunkBytes(chunk);
        if (chunk != m.chunkBytes()) costModel = withChunk(m, chunk);
    }

    private static CostModel withChunk(CostModel m, long chunk) {
        return m.chunkBytes() == chunk ? m : new CostModel(m.alphaSeconds(), m.betaSecondsPerByte(), m.gammaSecondsPerByte(), chunk);
    }

    /** Auto chunk size from what this rank sees (only rank 0's choice is used). */
    private long localChunkChoice() {
        if (options.chunkBytes() > 0) return options.chunkBytes();
        int local = 0;
        for (int p = 0; p < size(); p++) {
            if (transport.linkKind(p).sameHost()) local++;
        }
        return local > Runtime.getRuntime().availableProcessors()
                ? ProcessGroupOptions.OVERSUBSCRIBED_CHUNK_BYTES : ProcessGroupOptions.DEFAULT_CHUNK_BYTES;
    }

    /**
     * Creates the world group over {@code transport}, which it then owns ({@link #close} closes it). Collective:
     * every rank calls it. Unless the options carry a cost model, α and β are measured here (a few ms).
     */
    public static ProcessGroup create(Transport transport, ProcessGroupOptions options) {
        int[] identity = new int[transport.size()];
        Arrays.setAll(identity, i -> i);
        ProcessGroup g = new ProcessGroup(transport, true, 0, identity, options);
        try {
            g.startUp();
        } catch (RuntimeException | Error e) { // no caller will ever close a group it did not get: its thread would stay
            g.close();
            throw e;
        }
        return g;
    }

    /** Bytes of one rank's host record in the identity exchange: an identity hash, then the name (UTF-8, padded). */
    private static final int HOST_RECORD_LONGS = 8;

    /** Every rank learns every rank's host (one small ring all-gather at group start, outside the op sequence). */
    private HostTopology exchangeHostIdentities() {
        int n = size();
        long[] mine = new long[HOST_RECORD_LONGS];
        String identity = HostIdentity.identity(), name = HostIdentity.name();
        mine[0] = identityHash(identity);
        byte[] nameBytes = Arrays.copyOf(name.getBytes(StandardCharsets.UTF_8), (HOST_RECORD_LONGS - 1) * 8);
        ByteBuffer.wrap(nameBytes).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(mine, 1, HOST_RECORD_LONGS - 1);
        long[] all = new long[n * HOST_RECORD_LONGS];
        try (Arena arena = Arena.ofConfined()) { // native: no staging on any transport
            MemorySegment in = arena.allocate(HOST_RECORD_LONGS * 8L, 8), out = arena.allocate((long) n * HOST_RECORD_LONGS * 8, 8);
            MemorySegment.copy(MemorySegment.ofArray(mine), 0, in, 0, in.byteSize());
            AllGatherAlgorithm ring = (AllGatherAlgorithm) AlgorithmSelector.byName(Collective.ALL_GATHER, "ring");
            ring.allGather(engine.context(DType.INT64, null), in, out);
            MemorySegment.copy(out, 0, MemorySegment.ofArray(all), 0, out.byteSize());
        }
        String[] ids = new String[n], names = new String[n];
        for (int r = 0; r < n; r++) {
            ByteBuffer b = ByteBuffer.allocate((HOST_RECORD_LONGS - 1) * 8).order(ByteOrder.LITTLE_ENDIAN);
            b.asLongBuffer().put(all, r * HOST_RECORD_LONGS + 1, HOST_RECORD_LONGS - 1);
            String nm = new String(b.array(), StandardCharsets.UTF_8).replace("\0", "");
            ids[r] = Long.toHexString(all[r * HOST_RECORD_LONGS]) + "/" + nm;
            names[r] = nm;
        }
        return HostTopology.of(ids, names);
    }

    private static long identityHash(String s) {
        long h = 1125899906842597L;
        for (int i = 0; i < s.length(); i++) h = 31 * h + s.charAt(i);
        return h;
    }

    /**
     * Group start, collective, on the communication thread and outside the op sequence (so the first collective
     * the caller issues is #1): exchange host identities, then measure α-β per link class unless the options carry a
     * cost model.
     */
    private void startUp() {
        CostModel given = costModel;
        HostTopology known = options.topology();
        if (known != null && known.size() != size()) {
            throw new IllegalArgumentException("options.topology has " + known.size() + " ranks, the group " + size());
        }
        if (given != null && known != null) {
            topology = known;
            intraHostCost = interHostCost = given;
            nameHostsInErrors();
            return;
        }
        // also when the link figures come from an earlier start and nothing is measured; before the exchange, whose
        // timeout is the group's: a cold JVM's warm-up is no peer's fault, and takes longer than a short timeout
        if (size() > 1) ReduceKernels.warmUp();
        OpDescriptor d = new OpDescriptor(Collective.BARRIER, -1, 0, null, null, -1, null); // group start-up exchange
        CommWork w = engine.submit(d, describe(d), BufferGuard.NONE, () -> {
            HostTopology topo = known != null ? known : exchangeHostIdentities();
            topology = topo;
            if (given != null) {
                intraHostCost = interHostCost = given;
                return;
            }
            CostModelProbe.LinkCosts costs = size() > 1 ? rankZerosLinkCosts() : options.linkCosts();
            if (costs == null || !covers(costs, topo)) {
                costs = CostModelProbe.measure(engine.context(DType.FLOAT32, null), localChunkChoice(),
                        topo.intraHostPair(), topo.interHostPair());
                measuredLinkCosts = costs;
            }
            intraHostCost = costs.intraHost() != null ? costs.intraHost() : costs.interHost();
            interHostCost = costs.interHost() != null ? costs.interHost() : costs.intraHost();
        });
        try {
            w.waitFor();
        } catch (CommException e) {
            close();
            throw e;
        }
        if (given == null) {
            costModel = topology.spansHosts() ? interHostCost : intraHostCost;
            useChunk(costModel);
        }
        nameHostsInErrors();
    }

    /**
     * Rank 0's {@link ProcessGroupOptions#linkCosts}, on every rank: whether to measure is a collective choice, so it
     * is rank 0's alone (only rank 0 looks in the job's store, {@link ProcessGroups}). Part of group start.
     */
    private CostModelProbe.LinkCosts rankZerosLinkCosts() {
        CollectiveContext c = engine.context(DType.FLOAT32, null);
        MemorySegment seg = c.scratch(2, 1 + LinkCostCache.BYTES);
        CostModelProbe.LinkCosts mine = options.linkCosts();
        if (rank() == 0) {
            seg.set(ValueLayout.JAVA_BYTE, 0, (byte) (mine == null ? 0 : 1));
            if (mine != null) MemorySegment.copy(MemorySegment.ofArray(LinkCostCache.encode(mine)), 0, seg, 1, LinkCostCache.BYTES);
        }
        BinomialBroadcast.INSTANCE.broadcast(c, seg, 0);
        if (seg.get(ValueLayout.JAVA_BYTE, 0) == 0) return null;
        byte[] b = new byte[LinkCostCache.BYTES];
        MemorySegment.copy(seg, 1, MemorySegment.ofArray(b), 0, LinkCostCache.BYTES);
        return LinkCostCache.decode(b);
    }

    /** Whether figures from an earlier start have every link class {@code topo} has (all ranks decide alike). */
    private static boolean covers(CostModelProbe.LinkCosts costs, HostTopology topo) {
        return (topo.intraHostPair() == null || costs.intraHost() != null)
                && (topo.interHostPair() == null || costs.interHost() != null);
    }

    /**
     * The figures this group measured at its start, per link class; null when it took them from the options (a
     * cost model, or {@link ProcessGroupOptions#linkCosts} from an earlier start) or is a sub-group.
     */
    public CostModelProbe.LinkCosts measuredLinkCosts() { return measuredLinkCosts; }

    /** The figures this group selects with, for each link class it has (measured, given, or from an earlier start). */
    public CostModelProbe.LinkCosts linkCosts() {
        return new CostModelProbe.LinkCosts(topology.intraHostPair() != null ? intraHostCost : null,
                topology.interHostPair() != null ? interHostCost : null);
    }

    private void nameHostsInErrors() {
        HostTopology t = topology;
        engine.topology(t);
        CostModel flat = costModel;
        if (flat != null) {
            fabric = new Fabric(t, withChunk(intraHostCost != null ? intraHostCost : flat, flat.chunkBytes()),
                    withChunk(interHostCost != null ? interHostCost : flat, flat.chunkBytes()));
        }
        if (t.spansHosts()) engine.peerHosts(p -> p >= 0 && p < t.size() ? t.hostName(t.hostOf(p)) : null);
        if (groupId != 0) engine.worldRanks(p -> p >= 0 && p < worldRanks.length ? worldRanks[p] : p);
    }

    /** Which ranks share a host (exchanged at world-group start; sub-groups take their part of it). */
    public HostTopology topology() { return topology; }

    /**
     * The α-β-γ figures of one class of link, as measured at world-group start between two ranks of that class (the
     * group-wide {@link #costModel()} is the inter-host one when the group spans hosts: a flat algorithm runs at the
     * pace of its slowest link).
     */
    public CostModel costModel(LinkClass linkClass) { return linkClass == LinkClass.INTRA_HOST ? intraHostCost : interHostCost; }

    public int rank() { return transport.rank(); }

    public int size() { return transport.size(); }

    /** The rank of group rank {@code r} in the world group. */
    public int worldRank(int r) { return worldRanks[r]; }

    public CostModel costModel() { return costModel; }

    public ProcessGroupOptions options() { return options; }

    /** The algorithm this group would use for {@code c} on {@code bytes} (see {@link Algorithm#predictSeconds}). */
    public Algorithm algorithmFor(Collective c, long bytes) { return select(c, bytes); }

    /** How this rank talks to group rank {@code peer}. */
    public LinkKind linkKind(int peer) { return transport.linkKind(peer); }

    // ---------------------------------------------------------------- all-reduce

    /** In place: {@code buf} (count elements) becomes the reduction over all ranks. */
    public Work allReduceAsync(MemorySegment buf, long count, DType dtype, ReduceOp op) { return allReduce0(buf, count, dtype, op, false); }

    /**
     * As {@link #allReduceAsync(float[], int, int, ReduceOp)}, with {@code algorithm} whatever the group would pick:
     * for a caller that needs one of its properties (e.g. {@link dev.jtrain.comm.algo.OrderedAllReduce}'s summation
     * order). Every rank must name the same one.
     */
    public Work allReduceAsync(float[] a, int offset, int count, ReduceOp op, AllReduceAlgorithm algorithm) {
        return allReduce0(floats(a, offset, count), count, DType.FLOAT32, op, false, algorithm);
    }

    private Work allReduce0(MemorySegment buf, long count, DType dtype, ReduceOp op, boolean blocking) {
        return allReduce0(buf, count, dtype, op, blocking, null);
    }

    private Work allReduce0(MemorySegment buf, long count, DType dtype, ReduceOp op, boolean blocking, AllReduceAlgorithm algorithm) {
        MemorySegment b = exact(buf, dtype.bytes(count), "buf");
        OpDescriptor d = algorithm == null ? issue(Collective.ALL_REDUCE, count, dtype, op, -1, b.byteSize())
                : new OpDescriptor(Collective.ALL_REDUCE, seq.incrementAndGet(), count, dtype, op, -1, algorithm);
        AllReduceAlgorithm a = (AllReduceAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(), List.of(b), () -> {
            a.allReduce(engine.context(dtype, op), b, count);
            if (op == ReduceOp.AVG) ReduceKernels.divide(dtype, b, count, size());
        });
    }

    public void allReduce(MemorySegment buf, long count, DType dtype, ReduceOp op) { allReduce0(buf, count, dtype, op, true).waitFor(); }

    public Work allReduceAsync(float[] a, int offset, int count, ReduceOp op) {
        return allReduceAsync(floats(a, offset, count), count, DType.FLOAT32, op);
    }

    public void allReduce(float[] a, int offset, int count, ReduceOp op) { allReduce(floats(a, offset, count), count, DType.FLOAT32, op); }

    /**
     * All-reduce of float32 data with bfloat16 on the wire (opt-in compression, like PyTorch's
     * {@code bf16_compress_hook}): the buffer is rounded to bfloat16, all-reduced as bfloat16 (half the bytes), and
     * expanded back; AVG then divides in float32. The result has ~3 significant digits and is identical on every rank.
     */
    public Work allReduceBf16WireAsync(MemorySegment f32, long count, ReduceOp op) { return allReduceBf16Wire0(f32, count, op, false); }

    private Work allReduceBf16Wire0(MemorySegment f32, long count, ReduceOp op, boolean blocking) {
        MemorySegment b = exact(f32, DType.FLOAT32.bytes(count), "f32");
        OpDescriptor d = issue(Collective.ALL_REDUCE, count, DType.BFLOAT16, op, -1, DType.BFLOAT16.bytes(count));
        AllReduceAlgorithm a = (AllReduceAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(), List.of(b), () -> {
            MemorySegment wire = engine.scratch().get(4, DType.BFLOAT16.bytes(count));
            ReduceKernels.compressBf16(b, wire, count);
            a.allReduce(engine.context(DType.BFLOAT16, op), wire, count);
            ReduceKernels.expandBf16(wire, b, count);
            // AVG divides the expanded sum in float32: one rounding fewer than dividing in bfloat16 (for p not a power
            // of two), and still the same bits on every rank, which all expand the same bfloat16 sum
            if (op == ReduceOp.AVG) ReduceKernels.divide(DType.FLOAT32, b, count, size());
        });
    }

    public void allReduceBf16Wire(MemorySegment f32, long count, ReduceOp op) { allReduceBf16Wire0(f32, count, op, true).waitFor(); }

    // ---------------------------------------------------------------- broadcast / reduce

    /** {@code buf} of {@code root} is copied into {@code buf} of every rank. */
    public Work broadcastAsync(MemorySegment buf, long count, DType dtype, int root) { return broadcast0(buf, count, dtype, root, false); }

    private Work broadcast0(MemorySegment buf, long count, DType dtype, int root, boolean blocking) {
        checkRoot(root);
        MemorySegment b = exact(buf, dtype.bytes(count), "buf");
        OpDescriptor d = issue(Collective.BROADCAST, count, dtype, null, root, b.byteSize());
        BroadcastAlgorithm a = (BroadcastAlgorithm) d.algorithm();
        return submit(blocking, d, rank() == root ? List.of(b) : List.of(), rank() == root ? List.of() : List.of(b),
                () -> a.broadcast(engine.context(dtype, null), b, root));
    }

    public void broadcast(MemorySegment buf, long count, DType dtype, int root) { broadcast0(buf, count, dtype, root, true).waitFor(); }

    public Work broadcastAsync(float[] a, int offset, int count, int root) {
        return broadcastAsync(floats(a, offset, count), count, DType.FLOAT32, root);
    }

    public void broadcast(float[] a, int offset, int count, int root) { broadcast(floats(a, offset, count), count, DType.FLOAT32, root); }

    /** The reduction lands in {@code buf} of {@code root}; other ranks' buffers are unchanged. */
    public Work reduceAsync(MemorySegment buf, long count, DType dtype, ReduceOp op, int root) { return reduce0(buf, count, dtype, op, root, false); }

    private Work reduce0(MemorySegment buf, long count, DType dtype, ReduceOp op, int root, boolean blocking) {
        checkRoot(root);
        MemorySegment b = exact(buf, dtype.bytes(count), "buf");
        OpDescriptor d = issue(Collective.REDUCE, count, dtype, op, root, b.byteSize());
        ReduceAlgorithm a = (ReduceAlgorithm) d.algorithm();
        return submit(blocking, d, rank() == root ? List.of() : List.of(b), rank() == root ? List.of(b) : List.of(), () -> {
            a.reduce(engine.context(dtype, op), b, count, root);
            if (op == ReduceOp.AVG && rank() == root) ReduceKernels.divide(dtype, b, count, size());
        });
    }

    public void reduce(MemorySegment buf, long count, DType dtype, ReduceOp op, int root) { reduce0(buf, count, dtype, op, root, true).waitFor(); }

    // ---------------------------------------------------------------- all-gather / reduce-scatter

    /**
     * Block r (countPerRank elements) of {@code out} receives {@code in} of rank r. {@code in} may be this rank's
     * block of {@code out} (in place, as NCCL allows): no algorithm receives into its own block except with the very
     * bytes already there.
     */
    public Work allGatherAsync(MemorySegment in, MemorySegment out, long countPerRank, DType dtype) { return allGather0(in, out, countPerRank, dtype, false); }

    private Work allGather0(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, boolean blocking) {
        MemorySegment i = exact(in, dtype.bytes(countPerRank), "in");
        MemorySegment o = exact(out, Math.multiplyExact(i.byteSize(), size()), "out");
        OpDescriptor d = issue(Collective.ALL_GATHER, countPerRank, dtype, null, -1, o.byteSize());
        AllGatherAlgorithm a = (AllGatherAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(i), List.of(o), () -> a.allGather(engine.context(dtype, null), i, o));
    }

    public void allGather(MemorySegment in, MemorySegment out, long countPerRank, DType dtype) { allGather0(in, out, countPerRank, dtype, true).waitFor(); }

    public Work allGatherAsync(float[] in, int inOffset, float[] out, int outOffset, int countPerRank) {
        return allGatherAsync(floats(in, inOffset, countPerRank), floats(out, outOffset, Math.multiplyExact(countPerRank, size())),
                countPerRank, DType.FLOAT32);
    }

    public void allGather(float[] in, int inOffset, float[] out, int outOffset, int countPerRank) {
        allGather(floats(in, inOffset, countPerRank), floats(out, outOffset, Math.multiplyExact(countPerRank, size())), countPerRank, DType.FLOAT32);
    }

    /** {@code out} (countPerRank elements) of rank r receives the reduction of block r of every rank's {@code in}. */
    public Work reduceScatterAsync(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, ReduceOp op) { return reduceScatter0(in, out, countPerRank, dtype, op, false); }

    private Work reduceScatter0(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, ReduceOp op, boolean blocking) {
        MemorySegment o = exact(out, dtype.bytes(countPerRank), "out");
        MemorySegment i = exact(in, Math.multiplyExact(o.byteSize(), size()), "in");
        OpDescriptor d = issue(Collective.REDUCE_SCATTER, countPerRank, dtype, op, -1, i.byteSize());
        ReduceScatterAlgorithm a = (ReduceScatterAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(i), List.of(o), () -> {
            a.reduceScatter(engine.context(dtype, op), i, o, countPerRank);
            if (op == ReduceOp.AVG) ReduceKernels.divide(dtype, o, countPerRank, size());
        });
    }

    public void reduceScatter(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, ReduceOp op) {
        reduceScatter0(in, out, countPerRank, dtype, op, true).waitFor();
    }

    /**
     * Reduce-scatter of float32 data with bfloat16 on the wire, the reduce-scatter form of
     * {@link #allReduceBf16WireAsync}: {@code in} (float32, {@code size() * countPerRank}) is rounded to bfloat16, the
     * reduction runs in bfloat16 (each step decodes to float32, adds, rounds to nearest even), and this rank's block
     * is expanded into {@code out} (float32), where AVG divides. Error: each input rounds once (relative u = 2^-8) and
     * each of the p-1 partial sums once more, so |result - exact| <= (p + 1) * u * sum|x| per element (first order;
     * AVG's float32 division adds 2^-24 relative).
     */
    public Work reduceScatterBf16WireAsync(MemorySegment in, MemorySegment out, long countPerRank, ReduceOp op) {
        MemorySegment o = exact(out, DType.FLOAT32.bytes(countPerRank), "out");
        MemorySegment i = exact(in, Math.multiplyExact(o.byteSize(), size()), "in");
        long total = Math.multiplyExact(countPerRank, (long) size());
        OpDescriptor d = issue(Collective.REDUCE_SCATTER, countPerRank, DType.BFLOAT16, op, -1, DType.BFLOAT16.bytes(total));
        ReduceScatterAlgorithm a = (ReduceScatterAlgorithm) d.algorithm();
        return submit(false, d, List.of(i), List.of(o), () -> {
            MemorySegment wireIn = engine.scratch().get(4, DType.BFLOAT16.bytes(total));
            MemorySegment wireOut = engine.scratch().get(5, DType.BFLOAT16.bytes(countPerRank));
            ReduceKernels.compressBf16(i, wireIn, total);
            a.reduceScatter(engine.context(DType.BFLOAT16, op), wireIn, wireOut, countPerRank);
            ReduceKernels.expandBf16(wireOut, o, countPerRank);
            if (op == ReduceOp.AVG) ReduceKernels.divide(DType.FLOAT32, o, countPerRank, size()); // as in the all-reduce
        });
    }

    public Work reduceScatterAsync(float[] in, int inOffset, float[] out, int outOffset, int countPerRank, ReduceOp op) {
        return reduceScatterAsync(floats(in, inOffset, Math.multiplyExact(countPerRank, size())), floats(out, outOffset, countPerRank),
                countPerRank, DType.FLOAT32, op);
    }

    public void reduceScatter(float[] in, int inOffset, float[] out, int outOffset, int countPerRank, ReduceOp op) {
        reduceScatter(floats(in, inOffset, Math.multiplyExact(countPerRank, size())), floats(out, outOffset, countPerRank), countPerRank, DType.FLOAT32, op);
    }

    // ---------------------------------------------------------------- gather / scatter / all-to-all / barrier

    /** Block r of {@code out} on {@code root} receives {@code in} of rank r; {@code out} may be null elsewhere. */
    public Work gatherAsync(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, int root) { return gather0(in, out, countPerRank, dtype, root, false); }

    private Work gather0(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, int root, boolean blocking) {
        checkRoot(root);
        MemorySegment i = exact(in, dtype.bytes(countPerRank), "in");
        MemorySegment o = rank() == root ? exact(out, Math.multiplyExact(i.byteSize(), size()), "out") : null;
        OpDescriptor d = issue(Collective.GATHER, countPerRank, dtype, null, root, i.byteSize() * size());
        GatherAlgorithm a = (GatherAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(i), o == null ? List.of() : List.of(o), () -> a.gather(engine.context(dtype, null), i, o, root));
    }

    public void gather(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, int root) {
        gather0(in, out, countPerRank, dtype, root, true).waitFor();
    }

    /** {@code out} of rank r receives block r of {@code in} on {@code root}; {@code in} may be null elsewhere. */
    public Work scatterAsync(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, int root) { return scatter0(in, out, countPerRank, dtype, root, false); }

    private Work scatter0(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, int root, boolean blocking) {
        checkRoot(root);
        MemorySegment o = exact(out, dtype.bytes(countPerRank), "out");
        MemorySegment i = rank() == root ? exact(in, Math.multiplyExact(o.byteSize(), size()), "in") : null;
        OpDescriptor d = issue(Collective.SCATTER, countPerRank, dtype, null, root, o.byteSize() * size());
        ScatterAlgorithm a = (ScatterAlgorithm) d.algorithm();
        return submit(blocking, d, i == null ? List.of() : List.of(i), List.of(o), () -> a.scatter(engine.context(dtype, null), i, o, root));
    }

    public void scatter(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, int root) {
        scatter0(in, out, countPerRank, dtype, root, true).waitFor();
    }

    /** Block j of {@code in} on rank r goes to block r of {@code out} on rank j; blocks have countPerRank elements. */
    public Work allToAllAsync(MemorySegment in, MemorySegment out, long countPerRank, DType dtype) { return allToAll0(in, out, countPerRank, dtype, false); }

    private Work allToAll0(MemorySegment in, MemorySegment out, long countPerRank, DType dtype, boolean blocking) {
        long total = Math.multiplyExact(dtype.bytes(countPerRank), size());
        MemorySegment i = exact(in, total, "in"), o = exact(out, total, "out");
        OpDescriptor d = issue(Collective.ALL_TO_ALL, countPerRank, dtype, null, -1, total);
        AllToAllAlgorithm a = (AllToAllAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(i), List.of(o), () -> a.allToAll(engine.context(dtype, null), i, o));
    }

    public void allToAll(MemorySegment in, MemorySegment out, long countPerRank, DType dtype) { allToAll0(in, out, countPerRank, dtype, true).waitFor(); }

    public Work barrierAsync() { return barrier0(false); }

    private Work barrier0(boolean blocking) {
        OpDescriptor d = issue(Collective.BARRIER, 0, null, null, -1, 0);
        BarrierAlgorithm a = (BarrierAlgorithm) d.algorithm();
        return submit(blocking, d, List.of(), List.of(), () -> a.barrier(engine.context(DType.INT32, null)));
    }

    public void barrier() { barrier0(true).waitFor(); }

    // ---------------------------------------------------------------- point-to-point (contract: class comment)

    /** Starts sending {@code src} (all its bytes) to group rank {@code dst} with {@code tag} (0..4095); contract: class comment. */
    public Work isend(MemorySegment src, int dst, int tag) { return p2p.isend(src, dst, tag); }

    /** Starts receiving exactly {@code dst.byteSize()} bytes from group rank {@code src} with {@code tag}. */
    public Work irecv(MemorySegment dst, int src, int tag) { return p2p.irecv(dst, src, tag); }

    /**
     * Sends {@code src} to group rank {@code dst}; returns when {@code src} may be reused, without waiting for the
     * receive to be posted (bounded buffering at the receiver; the contract is in the class comment).
     */
    public void send(MemorySegment src, int dst, int tag) { p2p.sendBlocking(src, dst, tag); }

    /** Receives exactly {@code dst.byteSize()} bytes from group rank {@code src}; returns when they are in {@code dst}. */
    public void recv(MemorySegment dst, int src, int tag) { p2p.recvBlocking(dst, src, tag); }

    public Work isend(float[] a, int offset, int count, int dst, int tag) { return isend(floats(a, offset, count), dst, tag); }

    public Work irecv(float[] a, int offset, int count, int src, int tag) { return irecv(floats(a, offset, count), src, tag); }

    public void send(float[] a, int offset, int count, int dst, int tag) { send(floats(a, offset, count), dst, tag); }

    public void recv(float[] a, int offset, int count, int src, int tag) { recv(floats(a, offset, count), src, tag); }

    // ---------------------------------------------------------------- sub-groups

    /**
     * A sub-group of the given group ranks (torch's {@code new_group}). Collective over this group: every rank must
     * call it, with the same ranks, in the same order relative to its other {@code newGroup} calls. Members get the
     * group (group rank i = the i-th smallest of {@code ranks}); other ranks get empty. The sub-group has its own
     * communication thread, tags and sequence numbers, and shares this group's transport and cost model.
     */
    public Optional<ProcessGroup> newGroup(int[] ranks) {
        int[] members = ranks.clone();
        Arrays.sort(members);
        for (int i = 0; i < members.length; i++) {
            if (members[i] < 0 || members[i] >= size() || (i > 0 && members[i] == members[i - 1])) {
                throw new IllegalArgumentException("newGroup ranks must be distinct group ranks in 0.." + (size() - 1)
                        + ": ranks=" + Arrays.toString(ranks));
            }
        }
        int id = TagSpace.childId(groupId, children.incrementAndGet());
        int me = Arrays.binarySearch(members, rank());
        if (me < 0) return Optional.empty();
        int[] world = new int[members.length];
        for (int i = 0; i < members.length; i++) world[i] = worldRanks[members[i]];
        ProcessGroup g = new ProcessGroup(new SubGroupTransport(transport, members, me), false, id, world,
                options.withCostModel(costModel).withTopology(null));
        g.topology = topology.subset(members);
        g.intraHostCost = intraHostCost;
        g.interHostCost = interHostCost;
        CostModel m = g.topology.spansHosts() ? interHostCost : intraHostCost;
        if (m != null) {
            g.costModel = m;
            g.useChunk(m);
        }
        g.nameHostsInErrors();
        subGroups.add(g);
        return Optional.of(g);
    }

    /**
     * Declares the group unusable because of {@code why} (e.g. a hung peer found by the heartbeat): the operation now
     * running fails at once with it, and so does every later one. After {@code closeLinksAfterMs} the world group
     * closes its transport, which is what makes a call blocked on the silent peer return (and what the other ranks
     * see as this rank leaving: the grace lets them learn the cause first, so their errors name it too). Sub-groups
     * made by {@link #newGroup} are aborted with the same cause. Like NCCL's communicator abort: the group must then
     * be closed and the job restarted.
     */
    public void abort(CommException why, long closeLinksAfterMs) {
        engine.abort(why);
        for (ProcessGroup g : subGroups) g.abort(why, 0); // they share this transport: closing it is this group's
        if (!ownsTransport) return;
        if (closeLinksAfterMs <= 0) {
            closeTransport(false);
            return;
        }
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(closeLinksAfterMs);
        if (keepLinksUntilNanos == 0 || until - keepLinksUntilNanos > 0) keepLinksUntilNanos = until;
        Thread.ofPlatform().daemon().name("jtrain-abort-" + rank()).start(() -> closeTransport(true));
    }

    /**
     * Closes the links; with {@code afterGrace}, not before an earlier {@link #abort}'s grace is over, unless they are
     * closed already. {@link #close} waits for it too: the caller learns of the abort at once (its Work fails) and
     * would otherwise close the links right away, and a peer that had not read the finding yet would report "peer
     * closed its transport" instead of the silent rank. An abort without a grace closes at once.
     */
    private void closeTransport(boolean afterGrace) {
        long until = keepLinksUntilNanos;
        if (afterGrace && until != 0) {
            for (long left; !linksClosed && (left = until - System.nanoTime()) > 0; ) LockSupport.parkNanos(Math.min(left, 10_000_000L));
        }
        linksClosed = true;
        transport.close();
    }

    /** Until when an abort keeps this rank's links open (System.nanoTime); 0: no abort asked for a grace. */
    private volatile long keepLinksUntilNanos;
    private volatile boolean linksClosed;

    /** Fails queued work, stops the communication thread and (for the world group) closes the transport. */
    @Override
    public void close() {
        engine.close();
        p2p.close();
        // sub-groups end with the transport they share; their owners may have closed them already (close is idempotent),
        // and a process that runs another attempt in its JVM must not keep their threads
        for (ProcessGroup g : subGroups) g.close();
        if (ownsTransport) closeTransport(true);
        for (AutoCloseable c : alsoClose.reversed()) { // last registered first, as try-with-resources
            try {
                c.close();
            } catch (Exception ignored) {
                // closing is best effort; the group is gone either way
            }
        }
        alsoClose.clear();
    }

    /** Resources (e.g. the rendezvous store) that live as long as this group; closed in reverse order of registration. */
    void closeAlso(AutoCloseable resource) { alsoClose.add(resource); }

    // ---------------------------------------------------------------- internals

    private OpDescriptor issue(Collective kind, long count, DType dtype, ReduceOp op, int root, long bytes) {
        return new OpDescriptor(kind, seq.incrementAndGet(), count, dtype, op, root, select(kind, bytes));
    }

    private Algorithm select(Collective kind, long bytes) {
        Fabric f = fabric;
        return f != null ? selector.select(kind, size(), bytes, f) : selector.select(kind, size(), bytes, costModel);
    }

    /** {@code blocking}: the caller will wait anyway, so when nothing is queued run on the caller's thread (no hand-off). */
    private Work submit(boolean blocking, OpDescriptor d, List<MemorySegment> inputs, List<MemorySegment> outputs, GroupEngine.Body body) {
        BufferGuard guard = BufferGuard.of(options.debugDetail(), inputs, outputs);
        boolean callerOnly = confinedToCaller(inputs) || confinedToCaller(outputs);
        if (blocking) {
            if (callerOnly) return engine.runInlineWhenIdle(d, describe(d), guard, body);
            Work w = engine.runInlineIfIdle(d, describe(d), guard, body);
            if (w != null) return w;
        } else if (callerOnly) {
            seq.compareAndSet(d.seq(), d.seq() - 1); // never ran: give its number back so the ranks stay in step
            throw new IllegalArgumentException(describe(d) + ": an async collective runs on the group's communication thread,"
                    + " but a buffer belongs to a confined arena only this thread may access; allocate it from"
                    + " Arena.ofShared(), Arena.ofAuto() or the heap, or use the blocking form");
        }
        return engine.submit(d, describe(d), guard, body);
    }

    private static boolean confinedToCaller(List<MemorySegment> segs) {
        for (MemorySegment s : segs) if (!SegmentAccess.anyThreadMayAccess(s)) return true;
        return false;
    }

    String describe(OpDescriptor d) { return who() + " " + d; }

    String who() {
        return groupId == 0 ? "rank " + rank() : "rank " + rank() + " (world rank " + worldRanks[rank()] + ") of group g" + groupId;
    }

    long timeoutMs() { return timeoutMs; }

    private void checkRoot(int root) {
        if (root < 0 || root >= size()) throw new IllegalArgumentException("root out of range: root=" + root + " size=" + size());
    }

    private static MemorySegment exact(MemorySegment s, long bytes, String name) {
        if (s == null) throw new IllegalArgumentException(name + " must not be null");
        if (s.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " too small: byteSize=" + s.byteSize() + " needed=" + bytes);
        }
        return s.byteSize() == bytes ? s : s.asSlice(0, bytes);
    }

    private static MemorySegment floats(float[] a, int offset, int count) {
        if (offset < 0 || count < 0 || (long) offset + count > a.length) {
            throw new IllegalArgumentException("float[] range out of bounds: offset=" + offset + " count=" + count + " length=" + a.length);
        }
        return MemorySegment.ofArray(a).asSlice(4L * offset, 4L * count);
    }
}
