package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportContractTest;
import dev.jtrain.comm.transport.UnexpectedBudget;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

class ShmTransportTest extends TransportContractTest {
    /** Unique per test instance, so the leftover check only sees this test's files. */
    private final String groupId = "shmtest" + seed;

    @Override
    protected Transport[] createGroup(int size, long timeoutMs, long maxUnexpectedBytes) throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        // A small ring makes every multi-KiB message wrap around many times.
        var opts = new ShmTransportOptions(groupId, timeoutMs, 64 * 1024, null);
        Transport[] out = new Transport[size];
        onEveryRank(size, r -> out[r] = ShmTransport.connect(store, r, size, allBut(r, size), opts, new UnexpectedBudget(maxUnexpectedBytes)));
        assertThat(leftovers()).as("ring files are unlinked as soon as every rank mapped them").isEmpty();
        return out;
    }

    /** 64 times the 64 KiB rings above. */
    @Override
    protected long largerThanTheLinksBuffers() { return 4L << 20; }

    private static boolean[] allBut(int rank, int size) {
        boolean[] peers = new boolean[size];
        java.util.Arrays.fill(peers, true);
        peers[rank] = false;
        return peers;
    }

    @Override
    protected LinkKind expectedLinkKind() { return LinkKind.SHM; }

    static List<Path> leftovers(String fragment) throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.filter(p -> p.getFileName().toString().startsWith(ShmBootstrap.FILE_PREFIX)
                    && p.getFileName().toString().contains(fragment)).toList();
        }
    }

    private List<Path> leftovers() throws IOException { return leftovers(groupId); }

    @AfterEach
    void noRingFilesLeft() throws IOException {
        assertThat(leftovers()).isEmpty();
    }

    /**
     * A 3-byte message shifts the ring off the 4-byte grid, then a sender fills the 64 KiB ring and goes away in the
     * middle of a float (65,501 payload bytes fit). A combining receive takes whole floats only, so one byte stays
     * unread for good: that must count as drained, and the receive fail at once naming the sender, not wait for
     * its 20 s timeout.
     */
    @Test
    void aSenderGoneInTheMiddleOfAnElementFailsACombiningReceivePromptly() throws Exception {
        Transport[] t = createGroup(2, 20_000);
        try {
            t[0].send(1, 2, random(3, seed));
            Thread sender = Thread.ofPlatform().start(() -> {
                try {
                    t[0].send(1, 2, MemorySegment.ofArray(new float[100_000]));
                } catch (RuntimeException expected) {
                    // its transport is closed under it
                }
            });
            // the sender parks only when it can not move a byte: the ring is full and the send is stuck
            long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (sender.getState() != Thread.State.TIMED_WAITING && sender.getState() != Thread.State.WAITING
                    && System.nanoTime() < until) {
                Thread.sleep(1); // a poll interval, leaving the core to the sender
            }
            assertThat(sender.getState()).isIn(Thread.State.TIMED_WAITING, Thread.State.WAITING);
            t[0].close();
            sender.join();
            t[1].recv(0, 2, Arena.ofAuto().allocate(3));
            long t0 = System.nanoTime();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> t[1].sendRecvCombine(-1, MemorySegment.NULL, 0,
                            MemorySegment.ofArray(new float[100_000]), 2, TRIPLE_PLUS))
                    .isInstanceOf(dev.jtrain.comm.CommException.class).hasMessageContaining("peer rank 0");
            assertThat((System.nanoTime() - t0) / 1e9).isLessThan(5.0);
        } finally {
            closeAll(t);
        }
    }

    @Test
    void aRankThatNeverMapsItsRingsLeavesNoFilesBehind() throws Exception {
        InMemoryStore store = new InMemoryStore(10_000);
        var opts = new ShmTransportOptions(groupId, 300, 64 * 1024, null);
        long t0 = System.nanoTime();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ShmTransport.connect(store, 0, 2, opts))
                .isInstanceOf(dev.jtrain.comm.CommException.class).hasMessageContaining("rank 0");
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(5.0);
        assertThat(leftovers()).isEmpty();
    }
}
