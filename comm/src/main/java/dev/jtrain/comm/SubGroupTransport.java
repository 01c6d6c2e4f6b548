package dev.jtrain.comm;

import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.Transport;

import java.lang.foreign.MemorySegment;

/**
 * A sub-group's view of its parent's transport: group rank i is parent rank {@code members[i]}. Tags are already
 * disjoint per group (see {@link TagSpace}), so this only renumbers ranks. Closing it does not close the parent.
 */
final class SubGroupTransport implements Transport {
    private final Transport parent;
    private final int[] members;
    private final int rank;

    SubGroupTransport(Transport parent, int[] members, int rank) {
        this.parent = parent;
        this.members = members.clone();
        this.rank = rank;
    }

    @Override public int rank() { return rank; }

    @Override public int size() { return members.length; }

    @Override public long timeoutMs() { return parent.timeoutMs(); }

    @Override public void send(int peer, int tag, MemorySegment src) { parent.send(members[peer], tag, src); }

    @Override public void recv(int peer, int tag, MemorySegment dst) { parent.recv(members[peer], tag, dst); }

    @Override
    public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
        parent.sendRecv(members[to], src, members[from], dst, tag);
    }

    @Override
    public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner combiner) {
        parent.sendRecvCombine(to < 0 ? -1 : members[to], src, members[from], acc, tag, combiner);
    }

    @Override
    public boolean combinesOnArrival(int to, int from) { return parent.combinesOnArrival(to < 0 ? -1 : members[to], members[from]); }

    @Override public LinkKind linkKind(int peer) { return parent.linkKind(members[peer]); }

    @Override public void close() {}
}
