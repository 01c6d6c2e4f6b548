package dev.jtrain.comm.transport;

import java.lang.foreign.MemorySegment;

/**
 * Routes each peer to one of two transports: shared memory for peers on this host, TCP for the others.
 *
 * <p>A {@link #sendRecv} whose two peers use different transports runs the shared-memory half first when it is
 * the send, otherwise the TCP send first: TCP peers drain their sockets on reader threads of their own, so the
 * TCP half always progresses without us, and the shared-memory half (which needs this thread) can not be starved.
 *
 * <p>Threading: as {@link Transport}; closing closes both delegates.
 */
public final class HybridTransport implements Transport {
    private final Transport shm;
    private final Transport tcp;
    private final boolean[] useShm;

    /** {@code useShm[p]} routes peer {@code p} through {@code shm}; self goes through {@code shm}. */
    public HybridTransport(Transport shm, Transport tcp, boolean[] useShm) {
        if (shm.rank() != tcp.rank() || shm.size() != tcp.size() || useShm.length != tcp.size()) {
            throw new IllegalArgumentException("delegates disagree: shm rank/size=" + shm.rank() + "/" + shm.size()
                    + " tcp rank/size=" + tcp.rank() + "/" + tcp.size() + " useShm.length=" + useShm.length);
        }
        this.shm = shm;
        this.tcp = tcp;
        this.useShm = useShm.clone();
        this.useShm[shm.rank()] = true;
    }

    private Transport via(int peer) { return useShm[peer] ? shm : tcp; }

    @Override public int rank() { return tcp.rank(); }

    @Override public int size() { return tcp.size(); }

    @Override public long timeoutMs() { return Math.max(shm.timeoutMs(), tcp.timeoutMs()); }

    @Override public void send(int peer, int tag, MemorySegment src) { via(peer).send(peer, tag, src); }

    @Override public void recv(int peer, int tag, MemorySegment dst) { via(peer).recv(peer, tag, dst); }

    @Override
    public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
        Transport a = via(to), b = via(from);
        if (a == b) {
            a.sendRecv(to, src, from, dst, tag);
        } else {
            a.send(to, tag, src); // shm send first, or tcp send first: see class comment
            b.recv(from, tag, dst);
        }
    }

    @Override
    public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag,
                                Combiner combiner) {
        if (to < 0 || via(to) == via(from)) via(from).sendRecvCombine(to, src, from, acc, tag, combiner);
        else Transport.super.sendRecvCombine(to, src, from, acc, tag, combiner); // mixed links: sendRecv's ordering
    }

    @Override
    public boolean combinesOnArrival(int to, int from) {
        return (to < 0 || via(to) == via(from)) && via(from).combinesOnArrival(to, from);
    }

    @Override public LinkKind linkKind(int peer) { return via(peer).linkKind(peer); }

    @Override
    public void close() {
        shm.close();
        tcp.close();
    }
}
