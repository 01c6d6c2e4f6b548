package dev.jtrain.comm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class PointToPointTest {
    @Test
    @Timeout(30)
    void taggedMessagesArriveInOrderPerTagAndReceivesMayBePostedFirst() throws Exception {
        LocalRanks.run(3, LocalRanks.options(), 10_000, g -> {
            int p = g.size(), r = g.rank(), right = (r + 1) % p, left = (r + p - 1) % p;
            List<Work> recvs = new ArrayList<>();
            float[][] got = new float[8][2];
            for (int i = 0; i < 8; i++) recvs.add(g.irecv(got[i], 0, 2, left, i % 2)); // posted before any send
            for (int i = 0; i < 8; i++) g.isend(new float[] {r * 100 + i, i}, 0, 2, right, i % 2).waitFor();
            for (Work w : recvs) w.waitFor();
            for (int i = 0; i < 8; i++) assertThat(got[i]).containsExactly(left * 100 + i, i);
        });
    }

    @Test
    @Timeout(30)
    void pointToPointDoesNotWaitBehindAPendingCollective() throws Exception {
        CountDownLatch received = new CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            float[] a = {1};
            if (g.rank() == 0) {
                Work all = g.allReduceAsync(a, 0, 1, ReduceOp.SUM); // rank 1 joins only after our recv completes
                float[] msg = new float[1];
                g.recv(msg, 0, 1, 1, 9);
                assertThat(msg[0]).isEqualTo(5f);
                received.countDown();
                all.waitFor();
            } else {
                g.send(new float[] {5}, 0, 1, 0, 9);
                assertThat(received.await(10, TimeUnit.SECONDS)).isTrue();
                g.allReduce(a, 0, 1, ReduceOp.SUM);
            }
            assertThat(a[0]).isEqualTo(2f);
        });
    }
}
