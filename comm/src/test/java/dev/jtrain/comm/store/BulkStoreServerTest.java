package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The checkpoint holder's store, through the ordinary store client: what it serves, what it refuses, its budget. */
@Timeout(60)
class BulkStoreServerTest {
    private BulkStoreServer server;
    private TcpStore client;

    private TcpStore connect(long budget, String token) {
        if (server == null) server = new BulkStoreServer("127.0.0.1", 0, "bulk-token", StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 5_000, budget);
        return TcpStore.create(TcpStoreOptions.client("127.0.0.1", server.port(), token, 5_000));
    }

    @AfterEach
    void close() {
        if (client != null) client.close();
        if (server != null) server.close();
    }

    @Test
    void largeValuesRoundTripBitwiseAndCountersDeletesAndKeysWork() {
        client = connect(64L << 20, "bulk-token");
        byte[] big = new byte[(8 << 20) + 13];
        new Random(7).nextBytes(big);
        client.set("a", big);
        big[0] ^= 1; // the server holds its own copy
        byte[] back = client.get("a", 0);
        big[0] ^= 1;
        assertThat(Arrays.equals(back, big)).isTrue();
        client.set("a", new byte[] {1, 2, 3}); // replaced, the old memory freed
        assertThat(client.get("a", 0)).containsExactly(1, 2, 3);
        assertThat(server.heldBytes()).isEqualTo(3);
        assertThat(client.add("n", 2)).isEqualTo(2);
        assertThat(client.add("n", 5)).isEqualTo(7);
        assertThat(new String(client.get("n", 0))).isEqualTo("7");
        assertThat(client.numKeys()).isEqualTo(2);
        assertThat(client.delete("a")).isTrue();
        assertThat(client.delete("a")).isFalse();
        assertThatThrownBy(() -> client.get("a", 10_000)).as("never waits, whatever the timeout asked")
                .isInstanceOf(CommTimeoutException.class).hasMessageContaining("absent");
        assertThat(server.heldBytes()).isEqualTo(1);
    }

    @Test
    void aValueBeyondTheBudgetIsRefusedWithTheFiguresAndNothingIsKept() {
        client = connect(1 << 20, "bulk-token");
        client.set("fits", new byte[1 << 19]);
        assertThatThrownBy(() -> client.set("too-much", new byte[(1 << 19) + 1])).isInstanceOf(CommException.class)
                .hasMessageContaining("holder full").hasMessageContaining("budget of 1048576 bytes");
        assertThat(client.numKeys()).isEqualTo(1);
        assertThat(server.heldBytes()).isEqualTo(1 << 19);
    }

    @Test
    void aStrangerWithTheWrongTokenIsRejectedAndRendezvousOperationsAreRefused() {
        assertThatThrownBy(() -> connect(1 << 20, "wrong")).isInstanceOf(CommException.class).hasMessageContaining("wrong job token");
        client = connect(1 << 20, "bulk-token");
        assertThatThrownBy(() -> client.compareSet("k", new byte[0], new byte[] {1})).isInstanceOf(CommException.class)
                .hasMessageContaining("not served by a bulk store");
    }
}
