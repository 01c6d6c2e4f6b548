package dev.jtrain.comm.transport;

import dev.jtrain.comm.store.InMemoryStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(30)
class TransportsTest {
    private static final String TOKEN = "transports-test";

    private static Transport[] create(String kind, int size) throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        Transport[] t = new Transport[size];
        var opts = new TransportOptions(kind, "g" + System.nanoTime(), 10_000, TOKEN, null, null, 64 * 1024);
        TransportContractTest.onEveryRank(size, r -> t[r] = Transports.create(opts, store, r, size));
        return t;
    }

    @Test
    void autoPicksSharedMemoryOnOneHostAndTcpWhenAsked() throws Exception {
        for (String kind : new String[]{"auto", "tcp", "shm"}) {
            Transport[] t = create(kind, 3);
            try {
                LinkKind expected = kind.equals("tcp") ? LinkKind.TCP : LinkKind.SHM;
                assertThat(t[0].linkKind(2)).isEqualTo(expected);
                assertThat(t[1].linkKind(1)).isEqualTo(LinkKind.SELF);
                TransportContractTest.onEveryRank(3, r -> {
                    MemorySegment src = Arena.ofAuto().allocate(1000).fill((byte) r);
                    MemorySegment dst = Arena.ofAuto().allocate(1000);
                    t[r].sendRecv((r + 1) % 3, src, (r + 2) % 3, dst, 1);
                    assertThat(dst.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 999)).isEqualTo((byte) ((r + 2) % 3));
                });
            } finally {
                TransportContractTest.closeAll(t);
            }
        }
    }

    @Test
    void hybridRoutesEachPeerToItsTransportAndMixedSendRecvCompletes() throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        int size = 3;
        boolean[][] useShm = {{true, true, false}, {true, true, false}, {false, false, true}}; // ranks 0,1 "share a host"
        Transport[] t = new Transport[size];
        var so = new dev.jtrain.comm.transport.shm.ShmTransportOptions("hyb" + System.nanoTime(), 10_000, 64 * 1024, null);
        var to = dev.jtrain.comm.transport.tcp.TcpTransportOptions.loopback(TOKEN, 10_000).withGroupId(so.groupId());
        TransportContractTest.onEveryRank(size, r -> t[r] = new HybridTransport(
                dev.jtrain.comm.transport.shm.ShmTransport.connect(store, r, size, useShm[r], so),
                dev.jtrain.comm.transport.tcp.TcpTransport.connect(store, r, size, to), useShm[r]));
        try {
            assertThat(t[0].linkKind(1)).isEqualTo(LinkKind.SHM);
            assertThat(t[0].linkKind(2)).isEqualTo(LinkKind.TCP);
            long bytes = 3L << 20;
            TransportContractTest.onEveryRank(size, r -> {
                MemorySegment src = TransportContractTest.random(bytes, r);
                MemorySegment dst = Arena.ofAuto().allocate(bytes);
                t[r].sendRecv((r + 1) % size, src, (r + size - 1) % size, dst, 2);
                TransportContractTest.assertSameBytes(dst, TransportContractTest.random(bytes, (r + size - 1) % size));
            });
        } finally {
            TransportContractTest.closeAll(t);
        }
    }

    @Test
    void creatingTheSameGroupAgainOnOneStoreUsesFreshKeys() throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        var opts = new TransportOptions("auto", "again", 10_000, TOKEN, null, null, 64 * 1024);
        for (String kind : new String[]{"tcp", "shm", "tcp"}) {
            Transport[] t = new Transport[2];
            TransportContractTest.onEveryRank(2, r -> t[r] = Transports.create(opts.withKind(kind), store, r, 2));
            try {
                TransportContractTest.onEveryRank(2, r -> {
                    MemorySegment dst = Arena.ofAuto().allocate(8);
                    t[r].sendRecv(1 - r, Arena.ofAuto().allocate(8).fill((byte) r), 1 - r, dst, 0);
                    assertThat(dst.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) (1 - r));
                });
            } finally {
                TransportContractTest.closeAll(t);
            }
        }
    }

    @Test
    void unknownKindIsRefused() {
        assertThatThrownBy(() -> new TransportOptions("ib", null, 1000, null, null, null, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("kind=ib");
    }
}
