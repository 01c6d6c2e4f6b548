package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.Transport;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A transport that counts the bytes each host sends to ranks on other hosts ({@code offHost[host]}), for tests of
 * what crosses the (emulated) hosts' slow links; closing it leaves the inner transport open.
 */
public record OffHostCounter(Transport inner, HostTopology topology, AtomicLongArray offHost) implements Transport {
    private void count(int to, long bytes) {
        if (to >= 0 && !topology.sameHost(rank(), to)) offHost.addAndGet(topology.hostOf(rank()), bytes);
    }

    @Override public int rank() { return inner.rank(); }
    @Override public int size() { return inner.size(); }
    @Override public long timeoutMs() { return inner.timeoutMs(); }
    @Override public LinkKind linkKind(int peer) { return inner.linkKind(peer); }
    @Override public void close() { }

    @Override public void send(int peer, int tag, MemorySegment src) {
        count(peer, src.byteSize());
        inner.send(peer, tag, src);
    }

    @Override public void recv(int peer, int tag, MemorySegment dst) { inner.recv(peer, tag, dst); }

    @Override public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
        count(to, src.byteSize());
        inner.sendRecv(to, src, from, dst, tag);
    }

    @Override public boolean combinesOnArrival(int to, int from) { return inner.combinesOnArrival(to, from); }

    @Override public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner combiner) {
        count(to, src.byteSize());
        inner.sendRecvCombine(to, src, from, acc, tag, combiner);
    }
}
