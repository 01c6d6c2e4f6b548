package dev.jtrain.comm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class AsyncCollectivesTest {
    @Test
    @Timeout(30)
    void severalInFlightCompleteInIssueOrderWhileTheCallerIsFree() throws Exception {
        int ops = 6, n = 1 << 16;
        CountDownLatch rank0Issued = new CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            float[][] bufs = new float[ops][n];
            for (int k = 0; k < ops; k++) java.util.Arrays.fill(bufs[k], k + 10 * g.rank());
            if (g.rank() == 1) assertThat(rank0Issued.await(10, TimeUnit.SECONDS)).isTrue();
            List<Integer> completed = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch callbacksRan = new CountDownLatch(ops);
            List<Work> works = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int k = 0; k < ops; k++) {
                int idx = k;
                Work w = g.allReduceAsync(bufs[k], 0, n, ReduceOp.SUM);
                w.future().thenRun(() -> {
                    completed.add(idx);
                    callbacksRan.countDown();
                });
                works.add(w);
            }
            long issueMs = (System.nanoTime() - t0) / 1_000_000;
            if (g.rank() == 0) {
                // rank 1 has not issued anything yet: nothing can have completed, and issuing did not block
                assertThat(works).noneMatch(Work::isCompleted);
                assertThat(issueMs).as("issuing %d async all-reduces took %d ms", ops, issueMs).isLessThan(1000);
                rank0Issued.countDown();
            }
            for (Work w : works) w.waitFor();
            assertThat(works).allMatch(Work::isSuccess);
            for (int k = 0; k < ops; k++) assertThat(bufs[k][n - 1]).isEqualTo(2 * k + 10f);
            // callbacks run on the completing thread in completion order (waitFor may return before they ran)
            assertThat(callbacksRan.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(completed).containsExactly(0, 1, 2, 3, 4, 5);
        });
    }

    /**
     * A buffer from a confined arena can only be touched by its owner. A blocking call on one, issued while async
     * work is still queued, must wait for that work and then run on the caller (not fail on the communication
     * thread); an async call on one is refused up front with advice.
     */
    @Test
    @Timeout(30)
    void blockingCallsOnConfinedBuffersRunOnTheCallerEvenBehindAsyncWorkAndAsyncOnesAreRefused() throws Exception {
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            float[] big = new float[1 << 18];
            java.util.Arrays.fill(big, 1f);
            Work pending = g.allReduceAsync(big, 0, big.length, ReduceOp.SUM);
            try (java.lang.foreign.Arena confined = java.lang.foreign.Arena.ofConfined()) {
                java.lang.foreign.MemorySegment x = confined.allocate(8);
                x.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, g.rank() + 1);
                g.allReduce(x, 1, DType.INT64, ReduceOp.SUM);
                assertThat(pending.isCompleted()).as("issue order: the async all-reduce finished first").isTrue();
                assertThat(x.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0)).isEqualTo(3L);
                assertThat(big[big.length - 1]).isEqualTo(2f);
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> g.allReduceAsync(x, 1, DType.INT64, ReduceOp.SUM))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("confined arena");
            }
        });
    }

    /**
     * From a Work callback (the communication thread) a blocking call on a confined buffer would wait for itself.
     * Rank 1 joins only once rank 0's callback is registered, so it runs when the all-reduce completes, on the
     * communication thread; only rank 0 makes the nested call (it fails locally, without talking to anyone).
     */
    @Test
    @Timeout(30)
    void aBlockingCallOnAConfinedBufferFromACallbackFailsAtOnceInsteadOfWaitingForItself() throws Exception {
        java.util.concurrent.CountDownLatch registered = new java.util.concurrent.CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options(), 10_000, g -> {
            if (g.rank() == 1) {
                assertThat(registered.await(10, TimeUnit.SECONDS)).isTrue();
                g.allReduceAsync(new float[16], 0, 16, ReduceOp.SUM).waitFor();
                return;
            }
            java.util.concurrent.CompletableFuture<Throwable> seen = new java.util.concurrent.CompletableFuture<>();
            Work w = g.allReduceAsync(new float[16], 0, 16, ReduceOp.SUM);
            Thread caller = Thread.currentThread();
            w.future().whenComplete((v, e) -> {
                if (Thread.currentThread() == caller) {
                    seen.complete(new AssertionError("callback ran on the caller; the test needs the communication thread"));
                    return;
                }
                try (java.lang.foreign.Arena mine = java.lang.foreign.Arena.ofConfined()) {
                    g.allReduce(mine.allocate(8), 1, DType.INT64, ReduceOp.SUM);
                    seen.complete(new AssertionError("the nested blocking call returned"));
                } catch (Throwable t) {
                    seen.complete(t);
                }
            });
            registered.countDown();
            // No w.waitFor() here: a thread woken from CompletableFuture.get() helps run pending dependents
            // (postComplete), so the callback could then run on this thread instead of the communication thread.
            assertThat(seen.get(10, TimeUnit.SECONDS)).isInstanceOf(CommException.class).hasMessageContaining("wait for itself");
        });
    }

    @Test
    @Timeout(30)
    void aBlockingCallWaitsForEarlierAsyncWorkAndThenRunsInline() throws Exception {
        LocalRanks.run(3, LocalRanks.options(), 10_000, g -> {
            float[] a = {1}, b = {10};
            Work first = g.allReduceAsync(a, 0, 1, ReduceOp.SUM);
            Work second = g.allReduceAsync(a, 0, 1, ReduceOp.SUM); // same buffer: must run after the first
            g.allReduce(b, 0, 1, ReduceOp.MAX);                       // queued behind both (not inline)
            assertThat(first.isCompleted() && second.isCompleted()).isTrue();
            assertThat(a[0]).isEqualTo(9f);
            assertThat(b[0]).isEqualTo(10f);
            g.allReduce(b, 0, 1, ReduceOp.SUM);                       // idle now: runs on this thread
            assertThat(b[0]).isEqualTo(30f);
        });
    }

    /**
     * A callback that runs on the communication thread and blocks on later work there would wait for itself: it is
     * refused at once. Rank 1 joins the first all-reduce only after rank 0 has attached the callback, so the callback
     * surely runs on rank 0's communication thread (not inline on the caller, as it would for an already done future).
     */
    @Test
    @Timeout(30)
    void waitingOnTheCommunicationThreadIsRefused() throws Exception {
        java.util.concurrent.CountDownLatch attached = new java.util.concurrent.CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options(), 5_000, g -> {
            float[] a = new float[4];
            if (g.rank() == 1) {
                assertThat(attached.await(10, TimeUnit.SECONDS)).isTrue();
                g.allReduce(a, 0, 4, ReduceOp.SUM);
                g.barrier(); // matches rank 0's barrier, issued from its callback
                return;
            }
            Work first = g.allReduceAsync(a, 0, 4, ReduceOp.SUM);
            java.util.concurrent.CompletableFuture<Throwable> seen = new java.util.concurrent.CompletableFuture<>();
            java.util.concurrent.atomic.AtomicReference<Work> second = new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.atomic.AtomicReference<String> callbackThread = new java.util.concurrent.atomic.AtomicReference<>();
            first.future().thenRun(() -> {
                callbackThread.set(Thread.currentThread().getName());
                second.set(g.barrierAsync());
                try {
                    second.get().waitFor();
                    seen.complete(null);
                } catch (Throwable t) {
                    seen.complete(t);
                }
            });
            attached.countDown();
            Throwable t = seen.get(10, TimeUnit.SECONDS);
            assertThat(callbackThread.get()).startsWith("jtrain-comm-");
            assertThat(t).as("waitFor on the communication thread").isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("deadlock");
            second.get().waitFor(); // from this thread it is fine, and the barrier completes
        });
    }
}
