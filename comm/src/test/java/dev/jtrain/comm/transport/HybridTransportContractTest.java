package dev.jtrain.comm.transport;

import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.transport.shm.ShmTransport;
import dev.jtrain.comm.transport.shm.ShmTransportOptions;
import dev.jtrain.comm.transport.tcp.TcpTransport;
import dev.jtrain.comm.transport.tcp.TcpTransportOptions;

/** The contract for a group split over two pretend hosts: even ranks share memory, odd ranks too, TCP between. */
class HybridTransportContractTest extends TransportContractTest {
    @Override
    protected Transport[] createGroup(int size, long timeoutMs, long maxUnexpectedBytes) throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        String group = "hybrid" + seed + "x" + System.nanoTime();
        var so = new ShmTransportOptions(group, timeoutMs, 64 * 1024, null);
        var to = TcpTransportOptions.loopback("hybrid-token", timeoutMs).withGroupId(group);
        Transport[] out = new Transport[size];
        onEveryRank(size, r -> {
            boolean[] sameHost = new boolean[size];
            for (int p = 0; p < size; p++) sameHost[p] = p % 2 == r % 2;
            UnexpectedBudget budget = new UnexpectedBudget(maxUnexpectedBytes); // one per rank, shared by both links
            out[r] = new HybridTransport(ShmTransport.connect(store, r, size, sameHost, so, budget),
                    TcpTransport.connect(store, r, size, to, budget), sameHost);
        });
        return out;
    }

    /** Rank 0 and rank 1 sit on different pretend hosts. */
    @Override
    protected LinkKind expectedLinkKind() { return LinkKind.TCP; }

    @Override
    protected boolean sendBlocksWhileReceiverIsIdle() { return false; }
}
