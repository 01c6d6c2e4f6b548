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

    /**
     * waitFor(timeout) gives up waiting, not the operation: the receive times out for the caller, stays pending,
     * and completes with the right bytes once the peer sends (rank 1 sends only after rank 0's wait timed out).
     */
    @Test
    @Timeout(30)
    void waitForWithATimeoutLeavesTheOperationRunning() throws Exception {
        CountDownLatch waitTimedOut = new CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            if (g.rank() == 0) {
                float[] got = new float[3];
                Work recv = g.irecv(got, 0, 3, 1, 4);
                long t0 = System.nanoTime();
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> recv.waitFor(150))
                        .isInstanceOf(CommTimeoutException.class).hasMessageContaining("still running")
                        .hasMessageContaining("recv");
                assertThat((System.nanoTime() - t0) / 1e6).as("waited about the timeout").isGreaterThanOrEqualTo(140.0);
                assertThat(recv.isCompleted()).isFalse();
                assertThat(recv.exception()).isNull();
                waitTimedOut.countDown();
                recv.waitFor();
                assertThat(recv.isSuccess()).isTrue();
                assertThat(got).containsExactly(1f, 2f, 3f);
            } else {
                assertThat(waitTimedOut.await(10, TimeUnit.SECONDS)).isTrue();
                g.send(new float[] {1, 2, 3}, 0, 3, 0, 4);
            }
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

    /** Blocking forms run on the caller's thread, yet must not overtake async operations queued on the same stream. */
    @Test
    @Timeout(30)
    void blockingAndAsyncOperationsOnOneStreamKeepIssueOrder() throws Exception {
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            int n = 50_000; // big enough that the async sends are still running when the blocking one is issued
            if (g.rank() == 0) {
                List<Work> pending = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    float[] m = new float[n];
                    java.util.Arrays.fill(m, i);
                    pending.add(g.isend(m, 0, n, 1, 3));
                }
                float[] last = new float[n];
                java.util.Arrays.fill(last, 4);
                g.send(last, 0, n, 1, 3);
                for (Work w : pending) w.waitFor();
                float[] echo = new float[1];
                g.recv(echo, 0, 1, 1, 4); // blocking receive with nothing queued: the inline path
                assertThat(echo[0]).isEqualTo(10f);
            } else {
                float sum = 0;
                for (int i = 0; i < 5; i++) {
                    float[] m = new float[n];
                    if (i % 2 == 0) g.recv(m, 0, n, 0, 3);
                    else g.irecv(m, 0, n, 0, 3).waitFor();
                    assertThat(m[0]).isEqualTo(i);
                    assertThat(m[n - 1]).isEqualTo(i);
                    sum += m[0];
                }
                g.send(new float[] {sum}, 0, 1, 0, 4);
            }
        });
    }
}
