package dev.jtrain.comm;

import dev.jtrain.comm.transport.LinkKind;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FailureReportingTest {
    /**
     * The reduce kernels' warm-up runs once per JVM, at the first group start; the ranks here are threads of one JVM,
     * and whichever starts second does not wait for it. A group timeout of 300 ms must not include it.
     */
    @BeforeAll
    static void warmUpOnce() { dev.jtrain.comm.algo.ReduceKernels.warmUp(); }

    @Test
    @Timeout(30)
    void aRankThatNeverJoinsMakesTheOthersFailWithATimeoutNamingOpAndSequence() throws Exception {
        long timeoutMs = 1000;
        CountDownLatch othersDone = new CountDownLatch(2);
        LocalRanks.run(3, LocalRanks.options().withTimeoutMs(timeoutMs), timeoutMs, g -> {
            float[] a = new float[1000];
            g.allReduce(a, 0, 1000, ReduceOp.SUM); // #1 all join
            if (g.rank() == 2) {
                assertThat(othersDone.await(20, TimeUnit.SECONDS)).isTrue(); // stays alive, never issues #2
                return;
            }
            long t0 = System.nanoTime();
            Work w = g.allReduceAsync(a, 0, 1000, ReduceOp.SUM);
            assertThatThrownBy(w::waitFor).isInstanceOf(CommTimeoutException.class)
                    .hasMessageContaining("rank " + g.rank()).hasMessageContaining("allReduce #2");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(ms).isBetween(timeoutMs / 2, timeoutMs + 5000); // generous: CI boxes are loaded
            assertThat(w.exception()).isInstanceOf(CommTimeoutException.class);
            // the group is out of step now: later work fails fast and says why
            Work next = g.barrierAsync();
            assertThatThrownBy(next::waitFor).isInstanceOf(CommException.class).hasMessageContaining("unusable")
                    .hasMessageContaining("barrier #3");
            othersDone.countDown();
        });
    }

    /**
     * A ring exchange sends to one neighbour while it receives from the other, and either side can be what stalls:
     * the failure names both. Rank 2 never joins; rank 1 (which sends to 2 and receives from 0) used to blame only
     * rank 0, itself waiting for rank 2.
     */
    @Test
    @Timeout(30)
    void aStalledExchangeNamesTheNeighbourItSendsToAndTheOneItReceivesFrom() throws Exception {
        long timeoutMs = 1000;
        CountDownLatch othersDone = new CountDownLatch(2);
        LocalRanks.run(3, LocalRanks.options().withTimeoutMs(timeoutMs).withAlgorithm(dev.jtrain.comm.algo.Collective.ALL_REDUCE, "ring"),
                timeoutMs, g -> {
            float[] a = new float[3000];
            g.allReduce(a, 0, a.length, ReduceOp.SUM);
            if (g.rank() == 2) {
                assertThat(othersDone.await(20, TimeUnit.SECONDS)).isTrue();
                return;
            }
            assertThatThrownBy(() -> g.allReduce(a, 0, a.length, ReduceOp.SUM)).isInstanceOf(CommException.class)
                    .hasMessageContaining("peer rank 2");
            othersDone.countDown();
        });
    }

    /**
     * The blocking form too: a blocking collective may run on the caller's thread, which the watchdog can not
     * unblock; with the group's timeout shorter than the transport's it must fail at the group's.
     */
    @Test
    @Timeout(60)
    void aBlockingCollectiveFailsWithinTheGroupTimeoutEvenWhenTheTransportWaitsLonger() throws Exception {
        rankOneSilentForRankZero(30_000, g -> {
            long t0 = System.nanoTime();
            float[] loss = {1f}; // as a trainer averages its loss: one blocking all-reduce on an idle group
            assertThatThrownBy(() -> g.allReduce(loss, 0, 1, ReduceOp.AVG)).isInstanceOf(CommTimeoutException.class)
                    .hasMessageContaining("rank 0 allReduce #1").hasMessageContaining("timeoutMs=300");
            assertThat((System.nanoTime() - t0) / 1_000_000).as("the group's 300 ms, not the transport's 30 s").isLessThan(5000);
        });
    }

    /**
     * Collectives queued behind one that timed out fail with it, within the group's timeout, not when the transport's
     * (here 20 s) finally frees the communication thread.
     */
    @Test
    @Timeout(60)
    void workQueuedBehindATimedOutCollectiveFailsWithinTheGroupTimeout() throws Exception {
        rankOneSilentForRankZero(20_000, g -> {
            long t0 = System.nanoTime();
            Work first = g.allReduceAsync(new float[] {1}, 0, 1, ReduceOp.SUM);
            Work second = g.allReduceAsync(new float[] {2}, 0, 1, ReduceOp.SUM);
            assertThatThrownBy(() -> first.waitFor(10_000)).isInstanceOf(CommTimeoutException.class);
            assertThatThrownBy(() -> second.waitFor(10_000)).isInstanceOf(CommException.class)
                    .hasMessageContaining("allReduce #2").hasMessageContaining("not run");
            assertThat((System.nanoTime() - t0) / 1_000_000).as("ms until both failed: the group's 300, not the transport's 20 000")
                    .isLessThan(5000);
        });
    }

    /** A group that fails to start closes itself: the caller never gets it, so nothing else would stop its thread. */
    @Test
    @Timeout(30)
    void aGroupThatFailsToStartLeavesNoThreadBehind() throws Exception {
        var transport = dev.jtrain.comm.transport.local.LocalTransport.createGroup(1, 1000)[0];
        var twoHosts = dev.jtrain.comm.topology.HostTopology.of(new String[] {"a", "b"}, new String[] {"a", "b"});
        long before = commThreads();
        assertThatThrownBy(() -> ProcessGroup.create(transport, ProcessGroupOptions.defaults().withTopology(twoHosts)))
                .hasMessageContaining("options.topology has 2 ranks");
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (commThreads() > before && System.nanoTime() < deadline) Thread.sleep(20);
        assertThat(commThreads()).as("communication threads alive").isLessThanOrEqualTo(before);
    }

    private static long commThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && t.getName().startsWith("jtrain-comm-")).count();
    }

    /**
     * Two ranks whose group times out after 300 ms, over a transport that would wait {@code transportTimeoutMs}: rank
     * 0 runs {@code rankZero} while rank 1 issues nothing until rank 0 is done.
     */
    private static void rankOneSilentForRankZero(long transportTimeoutMs, LocalRanks.Body rankZero) throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options().withTimeoutMs(300), transportTimeoutMs, g -> {
            if (g.rank() == 1) {
                assertThat(done.await(transportTimeoutMs + 10_000, TimeUnit.MILLISECONDS)).isTrue();
                return;
            }
            try {
                rankZero.run(g);
            } finally {
                done.countDown();
            }
        });
    }

    /**
     * The heartbeat aborts with a grace so that every peer reads the finding before this rank's links close; a caller
     * whose Work the abort failed at once must not close them sooner by closing the group. A rank that itself failed
     * (abort without a grace) closes them at once, and its close then waits for nothing.
     */
    @Test
    @Timeout(30)
    void closingAfterAnAbortKeepsTheLinksOpenForItsGraceUnlessTheRankAbortedAgainWithout() throws Exception {
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            if (g.rank() != 0) return;
            long t0 = System.nanoTime();
            g.abort(new CommException("rank 1 on host h1 sent no heartbeat for 4.0 s"), 1_500);
            g.close();
            assertThat((System.nanoTime() - t0) / 1e9).as("seconds until close returned").isGreaterThan(1.3).isLessThan(5);
        });
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            if (g.rank() != 0) return;
            g.abort(new CommException("rank 1 on host h1 sent no heartbeat for 4.0 s"), 20_000);
            g.abort(new CommException("rank 0: this rank's run failed"), 0);
            long t0 = System.nanoTime();
            g.close();
            assertThat((System.nanoTime() - t0) / 1e9).as("seconds until close returned").isLessThan(1);
        });
    }

    @Test
    @Timeout(30)
    void theWatchdogFailsWorkWithinTheGroupTimeoutEvenWhenTheTransportWaitsLonger() throws Exception {
        rankOneSilentForRankZero(20_000, g -> {
            long t0 = System.nanoTime();
            Work w = g.barrierAsync(); // rank 1 never joins; the transport would wait 20 s
            assertThatThrownBy(() -> w.waitFor(10_000)).isInstanceOf(CommTimeoutException.class)
                    .hasMessageContaining("rank 0 barrier #1").hasMessageContaining("timeoutMs=300")
                    .hasMessageContaining("peer rank 1");
            assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(5000);
        });
    }

    @Test
    @Timeout(30)
    void mismatchedCollectivesAreReportedWithBothSidesInDebugMode() throws Exception {
        LocalRanks.run(3, LocalRanks.options().withDebugDetail(true), 10_000, g -> {
            MemorySegment buf = MemorySegment.ofArray(new float[10]);
            Work w = g.rank() == 2 ? g.broadcastAsync(buf, 10, DType.FLOAT32, 0) : g.allReduceAsync(buf, 10, DType.FLOAT32, ReduceOp.SUM);
            assertThatThrownBy(w::waitFor).isInstanceOf(CollectiveMismatchException.class)
                    .hasMessageContaining("this rank (" + g.rank() + ") called " + (g.rank() == 2 ? "broadcast #1" : "allReduce #1"))
                    .hasMessageContaining(g.rank() == 2 ? "rank 0 called allReduce #1 (count=10 dtype=FLOAT32 op=SUM)"
                            : "rank 2 called broadcast #1 (count=10 dtype=FLOAT32 root=0)");
            // a count mismatch is caught the same way
            long count = g.rank() == 1 ? 12 : 10;
            Work c = g.allReduceAsync(MemorySegment.ofArray(new float[12]), count, DType.FLOAT32, ReduceOp.MAX);
            assertThatThrownBy(c::waitFor).isInstanceOf(CollectiveMismatchException.class).hasMessageContaining("count=12")
                    .hasMessageContaining("count=10");
            // every rank stopped at the same point, so the group is still usable
            float[] ok = {1};
            g.allReduce(ok, 0, 1, ReduceOp.SUM);
            assertThat(ok[0]).isEqualTo(3f);
        });
    }

    @Test
    @Timeout(30)
    void aBufferTouchedWhileQueuedFailsOnlyThatWork() throws Exception {
        CountDownLatch touched = new CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options().withDebugDetail(true), 10_000, g -> {
            float[] first = new float[64], second = new float[64];
            if (g.rank() == 1) assertThat(touched.await(10, TimeUnit.SECONDS)).isTrue();
            Work w1 = g.allReduceAsync(first, 0, 64, ReduceOp.SUM);
            Work w2 = g.allReduceAsync(second, 0, 64, ReduceOp.SUM);
            if (g.rank() == 0) {
                second[7] = 1; // w2 cannot have started: rank 1 has not issued w1 yet
                touched.countDown();
                assertThatThrownBy(w2::waitFor).isInstanceOf(BufferModifiedException.class)
                        .hasMessageContaining("rank 0 allReduce #2").hasMessageContaining("must not touch");
            } else {
                w2.waitFor();
            }
            w1.waitFor();
        });
    }

    /** An Error inside a collective (a missing class, an assertion) must fail its Work, not hang it until the timeout. */
    @Test
    @Timeout(30)
    void anErrorInsideACollectiveFailsItsWorkAtOnceOnBothPaths() {
        dev.jtrain.comm.transport.local.LocalTransport t = dev.jtrain.comm.transport.local.LocalTransport.createGroup(1, 600_000)[0];
        dev.jtrain.comm.transport.Transport failing = new dev.jtrain.comm.transport.Transport() {
            @Override public int rank() { return 0; }
            @Override public int size() { return 2; } // a phantom peer: every collective talks to rank 1
            @Override public long timeoutMs() { return 600_000; }
            @Override public void send(int peer, int tag, MemorySegment src) { throw new AssertionError("boom in send"); }
            @Override public void recv(int peer, int tag, MemorySegment dst) { throw new AssertionError("boom in recv"); }
            @Override public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
                throw new AssertionError("boom in sendRecv");
            }
            @Override public LinkKind linkKind(int peer) { return peer == 0 ? LinkKind.SELF : LinkKind.LOCAL; }
            @Override public void close() { t.close(); }
        };
        ProcessGroupOptions o = ProcessGroupOptions.defaults().withTimeoutMs(600_000)
                .withCostModel(dev.jtrain.comm.algo.CostModel.typicalSharedMemory(1 << 20))
                .withTopology(dev.jtrain.comm.topology.HostTopology.singleHost(2, "test")); // group start sends nothing
        try (ProcessGroup g = ProcessGroup.create(failing, o)) {
            long t0 = System.nanoTime();
            float[] a = new float[16];
            assertThatThrownBy(() -> g.allReduce(a, 0, 16, ReduceOp.SUM)) // blocking: runs on the caller's thread
                    .isInstanceOf(CommException.class).hasMessageContaining("allReduce #1").hasMessageContaining("boom");
            Work w = g.barrierAsync(); // the group is broken now: fails fast, naming the first failure
            assertThatThrownBy(w::waitFor).isInstanceOf(CommException.class).hasMessageContaining("boom");
            assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(10_000);
        }
        try (ProcessGroup g = ProcessGroup.create(failing, o)) {
            Work w = g.allReduceAsync(new float[16], 0, 16, ReduceOp.SUM); // async: on the communication thread
            assertThatThrownBy(() -> w.waitFor(10_000)).isInstanceOf(CommException.class)
                    .isNotInstanceOf(CommTimeoutException.class).hasMessageContaining("boom");
        }
    }
}
