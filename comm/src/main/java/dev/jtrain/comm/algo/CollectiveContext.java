package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.Transport;

import java.lang.foreign.MemorySegment;

/**
 * What one collective call gives its algorithm: the group's transport (ranks are group ranks), the tags of this
 * group, the element type and reduce operator, pooled scratch and the chunk size. It also remembers the last peer
 * talked to, so a failure can name it.
 *
 * <p>Zero-byte transfers are skipped on both sides: algorithms compute message sizes identically on sender and
 * receiver, so a skipped send always meets a skipped receive.
 *
 * <p>Threading: one context per call, used by the thread running the call; helper threads of the same call use
 * contexts of their own ({@link #lane}).
 */
public final class CollectiveContext {
    private final Transport transport;
    private final int tagBase;
    private final DType dtype;
    private final ReduceOp op;
    private final ScratchPool scratch;
    private final long chunkBytes;
    private final Combiner combiner;
    private final HostTopology topology;
    private final int lane;
    private volatile int lastPeer = -1;
    /** The peer the last exchange sent to while it received from {@link #lastPeer} (-1: a one-way transfer). */
    private volatile int lastSendPeer = -1;

    public CollectiveContext(Transport transport, int tagBase, DType dtype, ReduceOp op, ScratchPool scratch, long chunkBytes) {
        this(transport, tagBase, dtype, op, scratch, chunkBytes, null);
    }

    /** @param topology which of the group's ranks share a host; null means all of them (one host) */
    public CollectiveContext(Transport transport, int tagBase, DType dtype, ReduceOp op, ScratchPool scratch, long chunkBytes,
                             HostTopology topology) {
        this(transport, tagBase, dtype, op, scratch, chunkBytes, topology, 0);
    }

    private CollectiveContext(Transport transport, int tagBase, DType dtype, ReduceOp op, ScratchPool scratch, long chunkBytes,
                              HostTopology topology, int lane) {
        if (chunkBytes < 64) throw new IllegalArgumentException("chunkBytes must be >= 64: chunkBytes=" + chunkBytes);
        this.transport = transport;
        this.tagBase = tagBase;
        this.dtype = dtype;
        this.op = op;
        this.scratch = scratch;
        this.chunkBytes = chunkBytes;
        this.lane = lane;
        this.topology = topology != null ? topology : HostTopology.singleHost(transport.size(), "localhost");
        if (this.topology.size() != transport.size()) {
            throw new IllegalArgumentException("topology has " + this.topology.size() + " ranks, the transport " + transport.size());
        }
        this.combiner = new Combiner() {
            @Override public int elementBytes() { return dtype.byteSize(); }

            @Override public void combine(MemorySegment acc, MemorySegment in, long elements) {
                ReduceKernels.apply(dtype, op, acc, acc, in, elements);
            }
        };
    }

    /** Lanes per call: the calling thread's (0) and up to 3 helper threads', one collective channel each. */
    public static final int LANES = 4;

    /**
     * A context for helper thread {@code k} (1..3) of the same call: same transport, element type, operator and
     * topology, scratch of its own, and its own tag (collective channel k), so that two lanes may even
     * talk to the same peer at once. Transports allow concurrent calls for different (peer, tag) pairs; an algorithm
     * uses lanes to keep several exchanges in flight (see {@link HierarchicalAllReduce}). A lane uses channel 0 only.
     */
    public CollectiveContext lane(int k) {
        if (lane != 0 || k < 1 || k >= LANES) throw new IllegalArgumentException("lane must be 1.." + (LANES - 1) + " of a caller's context: lane=" + k);
        return new CollectiveContext(transport, tagBase, dtype, op, scratch.lane(k), chunkBytes, topology, k);
    }

    public int rank() { return transport.rank(); }

    /** Which of the group's ranks share a host. */
    public HostTopology topology() { return topology; }

    public int size() { return transport.size(); }

    public DType dtype() { return dtype; }

    public ReduceOp op() { return op; }

    public int elemSize() { return dtype.byteSize(); }

    /** Elements per chunk (at least 1). */
    public long chunkElems() { return Math.max(1, chunkBytes / dtype.byteSize()); }

    public long chunkBytes() { return chunkBytes; }

    /** The last peer a transfer was started with (the one received from, in an exchange), or -1. */
    public int lastPeer() { return lastPeer; }

    /**
     * In an exchange (send to one peer while receiving from another), the peer sent to; else -1. Either side can be
     * what stalls, so a failure names both.
     */
    public int lastSendPeer() { return lastSendPeer; }

    public MemorySegment scratch(int slot, long bytes) { return scratch.get(slot, bytes); }

    public void send(int peer, MemorySegment src) { send(0, peer, src); }

    public void recv(int peer, MemorySegment dst) { recv(0, peer, dst); }

    /** Send on one of the group's 4 collective channels (a separate tag), e.g. one per tree of a double tree. */
    public void send(int channel, int peer, MemorySegment src) {
        if (src.byteSize() == 0) return;
        lastSendPeer = -1;
        lastPeer = peer;
        transport.send(peer, tag(channel), src);
    }

    public void recv(int channel, int peer, MemorySegment dst) {
        if (dst.byteSize() == 0) return;
        lastSendPeer = -1;
        lastPeer = peer;
        transport.recv(peer, tag(channel), dst);
    }

    /** Simultaneous send and receive; either side may be empty. */
    public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst) {
        if (src.byteSize() == 0) {
            recv(from, dst);
        } else if (dst.byteSize() == 0) {
            send(to, src);
        } else {
            lastSendPeer = to == from ? -1 : to;
            lastPeer = from;
            transport.sendRecv(to, src, from, dst, tag(0));
        }
    }

    /**
     * Sends {@code src} to {@code to} while receiving a block from {@code from} that is reduced into {@code acc}
     * ({@code acc = acc (op) received}): one step of a reduce-scatter. Where the link can fold bytes in as they
     * arrive ({@link Transport#combinesOnArrival}) the received block never touches memory on its own; otherwise
     * it lands in {@code scratch} (at least {@code acc}'s size) and is reduced after. Either side may be empty.
     */
    public void sendRecvReduce(int to, MemorySegment src, int from, MemorySegment acc, MemorySegment scratch) {
        if (acc.byteSize() == 0) send(to, src);
        else reduceFrom(0, src.byteSize() == 0 ? -1 : to, src, from, acc, scratch);
    }

    /** Receives a block from {@code from} on {@code channel} and reduces it into {@code acc}, fused where the link can. */
    public void recvReduce(int channel, int from, MemorySegment acc, MemorySegment scratch) {
        if (acc.byteSize() > 0) reduceFrom(channel, -1, MemorySegment.NULL, from, acc, scratch);
    }

    /** {@code to < 0}: receive only. Only channel 0 carries a send (as in {@link #sendRecv}). */
    private void reduceFrom(int channel, int to, MemorySegment src, int from, MemorySegment acc, MemorySegment scratch) {
        long n = acc.byteSize();
        // fused: fold as the bytes arrive (bitwise the same result as receiving, then reducing: same operands, order)
        if (transport.combinesOnArrival(to, from)) {
            lastSendPeer = to < 0 || to == from ? -1 : to;
            lastPeer = from;
            transport.sendRecvCombine(to, src, from, acc, tag(channel), combiner);
            return;
        }
        MemorySegment in = scratch.asSlice(0, n);
        if (to < 0) recv(channel, from, in);
        else sendRecv(to, src, from, in);
        reduce(acc, acc, in, n / dtype.byteSize());
    }

    /** Sends {@code src} as consecutive messages of at most {@link #chunkBytes()}; pairs with {@link #recvChunked}. */
    public void sendChunked(int peer, MemorySegment src) {
        long n = src.byteSize();
        for (long off = 0; off < n; off += chunkBytes) send(peer, src.asSlice(off, Math.min(chunkBytes, n - off)));
    }

    public void recvChunked(int peer, MemorySegment dst) {
        long n = dst.byteSize();
        for (long off = 0; off < n; off += chunkBytes) recv(peer, dst.asSlice(off, Math.min(chunkBytes, n - off)));
    }

    /** Chunked simultaneous exchange; the peer must call it with the roles (and sizes) mirrored. */
    public void sendRecvChunked(int to, MemorySegment src, int from, MemorySegment dst) {
        long sn = src.byteSize(), rn = dst.byteSize();
        for (long off = 0; off < Math.max(sn, rn); off += chunkBytes) {
            sendRecv(to, src.asSlice(Math.min(off, sn), Math.max(0, Math.min(chunkBytes, sn - off))),
                    from, dst.asSlice(Math.min(off, rn), Math.max(0, Math.min(chunkBytes, rn - off))));
        }
    }

    /** {@code dst = a (op) b} over {@code count} elements of this call's dtype. */
    public void reduce(MemorySegment dst, MemorySegment a, MemorySegment b, long count) {
        ReduceKernels.apply(dtype, op, dst, a, b, count);
    }

    /** Byte slice of {@code count} elements starting at element {@code first}. */
    public MemorySegment elems(MemorySegment seg, long first, long count) {
        return seg.asSlice(first * dtype.byteSize(), count * dtype.byteSize());
    }

    private int tag(int channel) {
        if (channel < 0 || channel > 3) throw new IllegalArgumentException("channel must be 0..3: channel=" + channel);
        if (lane != 0 && channel != 0) throw new IllegalArgumentException("lane " + lane + " has channel 0 only: channel=" + channel);
        return tagBase + channel + lane;
    }

    /** Start of block {@code i} when {@code count} elements are cut into {@code p} near-equal blocks. */
    public static long blockStart(long count, int p, int i) { return count * i / p; }

    public static long blockLength(long count, int p, int i) { return blockStart(count, p, i + 1) - blockStart(count, p, i); }
}
