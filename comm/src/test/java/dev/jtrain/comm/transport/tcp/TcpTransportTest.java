package dev.jtrain.comm.transport.tcp;

import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportContractTest;
import dev.jtrain.comm.transport.UnexpectedBudget;
import org.junit.jupiter.api.Test;

import java.io.DataOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

class TcpTransportTest extends TransportContractTest {
    static final String TOKEN = "tcp-test-token";

    @Override
    protected Transport[] createGroup(int size, long timeoutMs, long maxUnexpectedBytes) throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        Transport[] out = new Transport[size];
        onEveryRank(size, r -> out[r] = TcpTransport.connect(store, r, size, TcpTransportOptions.loopback(TOKEN, timeoutMs),
                new UnexpectedBudget(maxUnexpectedBytes)));
        return out;
    }

    @Override
    protected LinkKind expectedLinkKind() { return LinkKind.TCP; }

    @Override
    protected boolean sendBlocksWhileReceiverIsIdle() { return false; }

    @Test
    void meshFormsWhenListeningOnAllInterfacesAndAdvertisingTheStoreFacingAddress() throws Exception {
        try (dev.jtrain.comm.store.TcpStore store = dev.jtrain.comm.store.TcpStore.create(
                dev.jtrain.comm.store.TcpStoreOptions.server("127.0.0.1", 0, TOKEN, 10_000))) {
            var opts = new TcpTransportOptions("0.0.0.0", store.localAddress(), TOKEN, "all", 10_000, 0, 0);
            Transport[] t = new Transport[2];
            // One store client per rank, as in a real job: a client's blocking get would otherwise hold up the other
            // rank's set on the same connection.
            dev.jtrain.comm.store.TcpStore[] clients = new dev.jtrain.comm.store.TcpStore[2];
            for (int r = 0; r < 2; r++)
                clients[r] = dev.jtrain.comm.store.TcpStore.create(dev.jtrain.comm.store.TcpStoreOptions.client("127.0.0.1", store.port(), TOKEN, 10_000));
            onEveryRank(2, r -> t[r] = TcpTransport.connect(clients[r], r, 2, opts));
            try {
                String addr = new String(store.get(TcpBootstrap.addressKey("all", 0)), StandardCharsets.UTF_8);
                assertThat(addr).startsWith("127.0.0.1:");
                onEveryRank(2, r -> {
                    MemorySegment dst = Arena.ofAuto().allocate(3);
                    t[r].sendRecv(1 - r, random(3, seed + r), 1 - r, dst, 0);
                    assertSameBytes(dst, random(3, seed + 1 - r));
                });
            } finally {
                closeAll(t);
                for (var c : clients) c.close();
            }
        }
    }

    @Test
    void closeEndsEveryThreadOfTheTransport() throws Exception {
        Transport[] t = createGroup(3, 5_000);
        assertThat(transportThreads()).isPositive();
        closeAll(t);
        long until = System.nanoTime() + 3_000_000_000L;
        while (transportThreads() > 0 && System.nanoTime() < until) Thread.sleep(10);
        assertThat(transportThreads()).isZero();
    }

    private static long transportThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(th -> th.isAlive() && th.getName().startsWith("jtrain-tcp-")).count();
    }

    @Test
    void sendToAPeerThatStopsReadingTimesOutThroughTheWatchdog() throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        var opts = TcpTransportOptions.loopback(TOKEN, 800);
        CompletableFuture<TcpTransport> rank0 = CompletableFuture.supplyAsync(() -> TcpTransport.connect(store, 0, 2, opts));
        String addr = new String(store.get(TcpBootstrap.addressKey("world", 0)), StandardCharsets.UTF_8);
        int port = Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1));
        // A "rank 1" that handshakes correctly and then never reads: a hung process.
        try (Socket hung = new Socket("127.0.0.1", port)) {
            byte[] token = TOKEN.getBytes(StandardCharsets.UTF_8);
            var d = new DataOutputStream(hung.getOutputStream());
            d.writeInt(TcpWireDescriptor.HANDSHAKE_MAGIC);
            d.writeShort(TcpWireDescriptor.VERSION);
            d.writeShort(token.length);
            d.writeShort(5);
            d.writeShort(0);
            d.writeInt(1);
            d.writeInt(2);
            d.write(token);
            d.write("world".getBytes(StandardCharsets.UTF_8));
            d.flush();
            try (TcpTransport t0 = rank0.get()) {
                long t1 = System.nanoTime();
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> t0.send(1, 9, Arena.ofAuto().allocate(256L << 20)))
                        .isInstanceOf(dev.jtrain.comm.CommTimeoutException.class).hasMessageContaining("peer=1");
                assertThat((System.nanoTime() - t1) / 1e9).isBetween(0.7, 6.0);
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> t0.send(1, 9, Arena.ofAuto().allocate(8)))
                        .isInstanceOf(dev.jtrain.comm.CommException.class).hasMessageContaining("peer=1");
            }
        }
    }

    @Test
    void strangersAtTheTransportPortAreRejectedAndTheMeshStillForms() throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        var opts = TcpTransportOptions.loopback(TOKEN, 10_000);
        CompletableFuture<TcpTransport> rank0 = CompletableFuture.supplyAsync(() -> TcpTransport.connect(store, 0, 2, opts));
        String addr = new String(store.get(TcpBootstrap.addressKey("world", 0)), StandardCharsets.UTF_8);
        int port = Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1));
        byte[] garbage = new byte[1000];
        new Random(seed).nextBytes(garbage);
        try (Socket s1 = new Socket("127.0.0.1", port); Socket s2 = new Socket("127.0.0.1", port); Socket s3 = new Socket("127.0.0.1", port)) {
            s1.getOutputStream().write(garbage);
            var d = new DataOutputStream(s2.getOutputStream()); // right magic, wrong token
            byte[] bad = "not-the-token".getBytes(StandardCharsets.UTF_8);
            d.writeInt(TcpWireDescriptor.HANDSHAKE_MAGIC);
            d.writeShort(TcpWireDescriptor.VERSION);
            d.writeShort(bad.length);
            d.writeShort(5);
            d.writeShort(0);
            d.writeInt(1);
            d.writeInt(2);
            d.write(bad);
            d.write("world".getBytes(StandardCharsets.UTF_8));
            d.flush();
            var o = new DataOutputStream(s3.getOutputStream()); // oversized token length
            o.writeInt(TcpWireDescriptor.HANDSHAKE_MAGIC);
            o.writeShort(TcpWireDescriptor.VERSION);
            o.writeShort(65535);
            o.writeShort(65535);
            o.writeShort(0);
            o.writeInt(1);
            o.writeInt(2);
            o.flush();
            assertThat(closedByServer(s1)).isTrue();
            assertThat(closedByServer(s2)).isTrue();
            assertThat(closedByServer(s3)).isTrue();
        }
        TcpTransport t1 = TcpTransport.connect(store, 1, 2, opts);
        TcpTransport t0 = rank0.get();
        try {
            assertThat(t0.rejectedConnections()).isEqualTo(3);
            MemorySegment msg = random(1000, seed);
            t1.send(0, 1, msg);
            MemorySegment dst = Arena.ofAuto().allocate(1000);
            t0.recv(1, 1, dst);
            assertSameBytes(dst, msg);
        } finally {
            t0.close();
            t1.close();
        }
    }

    /** Drains the socket until the server closes it (EOF or reset); at most a reject reply may arrive first. */
    private static boolean closedByServer(Socket s) throws Exception {
        s.setSoTimeout(5_000);
        try {
            return s.getInputStream().readAllBytes().length <= TcpWireDescriptor.HANDSHAKE_REPLY_LENGTH;
        } catch (java.net.SocketException reset) {
            return true;
        }
    }
}
