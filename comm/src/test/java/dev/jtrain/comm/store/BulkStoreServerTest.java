package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The checkpoint holder's store, through the ordinary store client: what it serves, what it refuses, its budget. */
@Timeout(60)
class BulkStoreServerTest {
    private BulkStoreServer server;
    private TcpStore client;

    @TempDir
    Path adoptDir;

    private TcpStore connect(long budget, String token) {
        if (server == null) server = new BulkStoreServer("127.0.0.1", 0, "bulk-token", StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 5_000, budget,
                adoptDir);
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

    /** A checkpoint step replacing the last: its values land in the freed values' memory, and read back as sent. */
    @Test
    void theMemoryOfFreedValuesServesTheNextValuesOfTheSameSize() {
        client = connect(64L << 20, "bulk-token");
        Random rnd = new Random(11);
        byte[][] step1 = {new byte[4 << 20], new byte[(1 << 20) + 5]};
        for (byte[] b : step1) rnd.nextBytes(b);
        client.set("s1/c0", step1[0]);
        client.set("s1/c1", step1[1]);
        client.delete("s1/c0");
        client.delete("s1/c1");
        assertThat(server.pooledBytes()).isEqualTo((4 << 20) + (1 << 20) + 5);
        byte[][] step2 = {new byte[4 << 20], new byte[(1 << 20) + 5]};
        for (byte[] b : step2) rnd.nextBytes(b);
        client.set("s2/c0", step2[0]);
        client.set("s2/c1", step2[1]);
        assertThat(server.blockCounts()).as("{recycled, allocated}").containsExactly(2, 2);
        assertThat(server.pooledBytes()).isZero();
        assertThat(Arrays.equals(client.get("s2/c0", 0), step2[0])).isTrue();
        assertThat(Arrays.equals(client.get("s2/c1", 0), step2[1])).isTrue();
        client.set("other", new byte[3 << 20]); // no freed value of that size
        assertThat(server.blockCounts()).containsExactly(2, 3);
    }

    /** What stays resident unused is bounded: half the budget. */
    @Test
    void freedMemoryBeyondHalfTheBudgetIsReleased() {
        client = connect(8L << 20, "bulk-token");
        client.set("a", new byte[3 << 20]);
        client.set("b", new byte[3 << 20]);
        client.delete("a");
        client.delete("b"); // 6 MiB freed, 4 MiB may stay
        assertThat(server.pooledBytes()).isEqualTo(3 << 20);
        client.set("c", new byte[5 << 20]); // another size: 5 held + 3 kept = the budget
        assertThat(server.pooledBytes()).isEqualTo(3 << 20);
        client.set("d", new byte[2 << 20]); // 7 held: what is kept for reuse goes
        assertThat(server.pooledBytes()).isZero();
        client.set("e", new byte[0]);
        client.delete("e");
        assertThat(server.pooledBytes()).isZero();
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

    /**
     * A file a client on the host left in the adoption directory: its first bytes served bitwise and counted; freed,
     * it waits (a free file) for a client to claim and overwrite it; the holder's close leaves nothing behind.
     */
    @Test
    void anAdoptedFileIsServedAsTheValueAndItsPagesServeTheNextChunk() throws IOException {
        client = connect(64L << 20, "bulk-token");
        long chunk = 4 << 20;
        byte[] big = new byte[(3 << 20) + 5];
        new Random(3).nextBytes(big);
        assertThat(AdoptionDirectory.claim(adoptDir, chunk, "chunk-1")).as("nothing freed yet: a new file").isFalse();
        assertThat(Files.size(adoptDir.resolve("chunk-1"))).as("every file has the chunk size").isEqualTo(chunk);
        write(adoptDir.resolve("chunk-1"), big);
        client.adopt("k", "chunk-1", big.length);
        assertThat(Arrays.equals(client.get("k", 0), big)).as("the first length bytes").isTrue();
        assertThat(client.locate("k")).as("a client on the host may map it instead").contains(new TcpStore.Located("chunk-1", big.length));
        client.set("sent", new byte[] {1, 2, 3});
        assertThat(client.locate("sent")).as("a value that came through the socket is no file").isEmpty();
        assertThatThrownBy(() -> client.locate("absent")).isInstanceOf(CommTimeoutException.class);
        long served = server.servedBytes();
        client.get("sent", 0);
        assertThat(server.servedBytes() - served).isEqualTo(3);
        assertThat(client.delete("sent")).isTrue();
        assertThat(server.heldBytes()).isEqualTo(big.length);
        assertThat(server.adoptedBytes()).isEqualTo(big.length);
        assertThat(AdoptionDirectory.claim(adoptDir, chunk, "chunk-2")).as("a held file is not free").isFalse();
        write(adoptDir.resolve("chunk-2"), new byte[] {4, 5});
        client.adopt("k", "chunk-2", 2); // replaces the first, whose file is now free
        assertThat(client.get("k", 0)).containsExactly(4, 5);
        assertThat(client.locate("k")).contains(new TcpStore.Located("chunk-2", 2));
        assertThat(server.heldBytes()).isEqualTo(2);
        assertThat(adoptDir.resolve("chunk-1")).doesNotExist();
        assertThat(AdoptionDirectory.claim(adoptDir, chunk, "chunk-3")).as("the freed file, claimed").isTrue();
        assertThat(AdoptionDirectory.claim(adoptDir, chunk, "chunk-4")).as("claimed once only").isFalse();
        Files.delete(adoptDir.resolve("chunk-4"));
        byte[] next = new byte[(int) chunk];
        new Random(4).nextBytes(next);
        write(adoptDir.resolve("chunk-3"), next); // overwritten in place, adopted again
        client.adopt("k2", "chunk-3", chunk);
        assertThat(Arrays.equals(client.get("k2", 0), next)).isTrue();
        assertThat(client.delete("k")).isTrue();
        server.close();
        server = null;
        try (var left = Files.list(adoptDir)) {
            assertThat(left).as("a closed holder leaves nothing in shared memory").isEmpty();
        }
    }

    private static void write(Path file, byte[] bytes) throws IOException {
        Files.write(file, bytes, java.nio.file.StandardOpenOption.WRITE); // in place, as a client overwrites a claimed file
    }

    @Test
    void adoptRefusesPathsOutsideItsDirectoryMissingFilesShortFilesAndWhatPassesTheBudget() throws IOException {
        client = connect(1 << 20, "bulk-token");
        Path outside = Files.write(adoptDir.resolveSibling(adoptDir.getFileName() + "-outside"), new byte[] {1});
        assertThatThrownBy(() -> client.adopt("k", "../" + outside.getFileName(), 1)).isInstanceOf(CommException.class)
                .hasMessageContaining("not a plain file name");
        assertThat(outside).exists();
        Files.delete(outside);
        assertThatThrownBy(() -> client.adopt("k", "missing", 1)).isInstanceOf(CommException.class)
                .hasMessageContaining("cannot adopt 'missing'");
        Files.write(adoptDir.resolve("short"), new byte[10]);
        assertThatThrownBy(() -> client.adopt("k", "short", 11)).isInstanceOf(CommException.class)
                .hasMessageContaining("not within the file's 10 bytes");
        Files.write(adoptDir.resolve("big"), new byte[(1 << 20) + 1]);
        assertThatThrownBy(() -> client.adopt("k", "big", (1 << 20) + 1)).isInstanceOf(CommException.class).hasMessageContaining("holder full");
        assertThat(adoptDir.resolve("big")).as("a refused file is not left behind").doesNotExist();
        assertThat(client.numKeys()).isZero();
        assertThat(server.heldBytes()).isZero();
    }

    @Test
    void aStrangerWithTheWrongTokenIsRejectedAndRendezvousOperationsAreRefused() {
        assertThatThrownBy(() -> connect(1 << 20, "wrong")).isInstanceOf(CommException.class).hasMessageContaining("wrong job token");
        client = connect(1 << 20, "bulk-token");
        assertThatThrownBy(() -> client.compareSet("k", new byte[0], new byte[] {1})).isInstanceOf(CommException.class)
                .hasMessageContaining("not served by a bulk store");
    }
}
