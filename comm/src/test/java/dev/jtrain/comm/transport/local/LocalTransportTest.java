package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.ThreadStates;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(20)
class LocalTransportTest {

    @Test
    void ringSendRecvDeliversEachRanksBytesToItsRightNeighbour() throws Exception {
        long seed = System.nanoTime();
        System.out.println("seed=" + seed);
        int size = 4;
        LocalTransport[] t = LocalTransport.createGroup(size, 5_000);
        ExecutorService pool = Executors.newFixedThreadPool(size);
        try {
            List<Future<byte[]>> got = new ArrayList<>();
            byte[][] sent = new byte[size][];
            for (int r = 0; r < size; r++) {
                sent[r] = new byte[1001];
                new Random(seed + r).nextBytes(sent[r]);
            }
            for (int r = 0; r < size; r++) {
                int rank = r;
                got.add(pool.submit(() -> {
                    MemorySegment dst = Arena.ofAuto().allocate(1001);
                    t[rank].sendRecv((rank + 1) % size, MemorySegment.ofArray(sent[rank]), (rank + size - 1) % size, dst, 7);
                    return dst.toArray(ValueLayout.JAVA_BYTE);
                }));
            }
            for (int r = 0; r < size; r++) assertThat(got.get(r).get()).isEqualTo(sent[(r + size - 1) % size]);
        } finally {
            pool.shutdownNow();
            for (LocalTransport x : t) x.close();
        }
    }

    @Test
    void messagesWithTheSameTagArriveInOrderAndTagsDoNotMix() {
        LocalTransport[] t = LocalTransport.createGroup(2, 5_000);
        t[0].send(1, 1, MemorySegment.ofArray(new byte[]{1}));
        t[0].send(1, 2, MemorySegment.ofArray(new byte[]{2, 2}));
        t[0].send(1, 1, MemorySegment.ofArray(new byte[]{3}));
        MemorySegment one = MemorySegment.ofArray(new byte[1]);
        MemorySegment two = MemorySegment.ofArray(new byte[2]);
        t[1].recv(0, 2, two);
        assertThat(two.toArray(ValueLayout.JAVA_BYTE)).containsExactly(2, 2);
        t[1].recv(0, 1, one);
        assertThat(one.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 1);
        t[1].recv(0, 1, one);
        assertThat(one.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 3);
    }

    @Test
    void closedPeerFailsPendingRecvAndHungPeerTimesOut() throws Exception {
        LocalTransport[] t = LocalTransport.createGroup(3, 300);
        assertThatThrownBy(() -> t[0].recv(2, 0, MemorySegment.ofArray(new byte[4])))
                .isInstanceOf(CommTimeoutException.class).hasMessageContaining("peer=2");
        // a timeout far beyond the close, so only a close that fails the pending recv ends it in time
        LocalTransport[] u = LocalTransport.createGroup(3, 10_000);
        Thread receiver = Thread.currentThread();
        Thread closer = Thread.ofVirtual().start(() -> {
            try {
                ThreadStates.awaitParkedIn(receiver, "dev.jtrain.comm.transport.", "recv"); // the recv below is pending
            } finally {
                u[1].close();
            }
        });
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> u[0].recv(1, 5, MemorySegment.ofArray(new byte[4])))
                .isInstanceOf(CommException.class).isNotInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("peer rank 1").hasMessageContaining("tag=5");
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(5.0);
        closer.join();
    }

    @Test
    void lengthMismatchNamesBothRanks() {
        LocalTransport[] t = LocalTransport.createGroup(2, 1_000);
        t[1].send(0, 3, MemorySegment.ofArray(new byte[5]));
        assertThatThrownBy(() -> t[0].recv(1, 3, MemorySegment.ofArray(new byte[4])))
                .isInstanceOf(CommException.class).hasMessageContaining("rank 0").hasMessageContaining("rank 1");
    }
}
