package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.DataOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Strangers on the store port are rejected and logged, and the admitted client keeps working throughout. */
@Timeout(30)
class TcpStoreStrangerTest {
    private static final String TOKEN = "right-token";

    @Test
    void wrongTokenGarbageOversizedAndSilentStrangersAreRejectedWhileTheJobContinues() throws Exception {
        long seed = System.nanoTime();
        System.out.println("seed=" + seed);
        try (TcpStoreServer server = new TcpStoreServer("127.0.0.1", 0, TOKEN, StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 300);
             TcpStore good = TcpStore.create(TcpStoreOptions.client("127.0.0.1", server.port(), TOKEN, 5_000))) {
            good.set("before", new byte[]{1});

            assertThatThrownBy(() -> TcpStore.create(TcpStoreOptions.client("127.0.0.1", server.port(), "wrong", 2_000)))
                    .isInstanceOf(CommException.class).hasMessageContaining("wrong job token");

            byte[] garbage = new byte[4096];
            new Random(seed).nextBytes(garbage);
            assertThat(sendAndAwaitClose(server.port(), garbage)).isTrue();

            // A valid header whose body length claims 2 GiB: must be refused before any allocation.
            var oversized = new java.io.ByteArrayOutputStream();
            var d = new DataOutputStream(oversized);
            d.writeInt(StoreFrameDescriptor.MAGIC);
            d.writeByte(StoreFrameDescriptor.OP_HELLO);
            d.writeByte(0);
            d.writeShort(2);
            d.writeInt(Integer.MAX_VALUE);
            assertThat(sendAndAwaitClose(server.port(), oversized.toByteArray())).isTrue();

            // Silent stranger: says nothing, dropped after the 300 ms handshake timeout.
            assertThat(sendAndAwaitClose(server.port(), new byte[0])).isTrue();

            // The admitted client was never disturbed.
            good.set("after", "ok".getBytes(StandardCharsets.UTF_8));
            assertThat(good.get("before")).containsExactly(1);
            assertThat(good.add("counter", 5)).isEqualTo(5);
            assertThat(server.rejectedConnections()).isEqualTo(4);
        }
    }

    /** Writes {@code bytes} on a fresh connection and reports whether the server closed it within 5 s (false: still open). */
    private static boolean sendAndAwaitClose(int port, byte[] bytes) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5_000);
            s.getOutputStream().write(bytes);
            s.getOutputStream().flush();
            InputStream in = s.getInputStream();
            try {
                while (in.read() >= 0) { /* drain any error reply until EOF */ }
            } catch (java.net.SocketTimeoutException stillOpen) {
                return false;
            } catch (java.net.SocketException reset) {
                return true; // closed with RST
            }
            return true; // EOF: closed
        }
    }
}
