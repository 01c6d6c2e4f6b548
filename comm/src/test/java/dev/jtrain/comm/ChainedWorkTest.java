package dev.jtrain.comm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChainedWorkTest {
    @Test
    @Timeout(10)
    void theSecondIsIssuedOnlyAfterTheFirstCompletesAndTheChainEndsWithIt() {
        CommWork first = new CommWork("first", null), second = new CommWork("second", null);
        AtomicBoolean issued = new AtomicBoolean();
        Work chain = ChainedWork.then(first, () -> {
            issued.set(true);
            return second;
        });
        assertThat(issued).isFalse();
        assertThat(chain.isCompleted()).isFalse();
        first.succeed();
        assertThat(issued).isTrue();
        assertThat(chain.isCompleted()).isFalse(); // the first alone does not complete the chain
        assertThat(chain.description()).isEqualTo("first then second");
        AtomicReference<Boolean> viaFuture = new AtomicReference<>();
        chain.future().whenComplete((v, e) -> viaFuture.set(e == null));
        second.succeed();
        chain.waitFor();
        assertThat(chain.isSuccess()).isTrue();
        assertThat(viaFuture.get()).isTrue();
    }

    @Test
    @Timeout(10)
    void aFailedFirstFailsTheChainAndNeverIssuesTheSecond() {
        CommWork first = new CommWork("first", null);
        AtomicBoolean issued = new AtomicBoolean();
        Work chain = ChainedWork.then(first, () -> {
            issued.set(true);
            return new CommWork("second", null);
        });
        first.fail(new CommException("rank 1 reduceScatter #3: peer 2 gone"));
        assertThat(issued).isFalse();
        assertThat(chain.isCompleted()).isTrue();
        assertThat(chain.isSuccess()).isFalse();
        assertThat(chain.exception()).hasMessageContaining("peer 2 gone");
        assertThatThrownBy(chain::waitFor).isInstanceOf(CommException.class).hasMessageContaining("peer 2 gone");
        assertThat(chain.future()).isCompletedExceptionally();
    }

    @Test
    @Timeout(10)
    void aFailedSecondFailsTheChain() {
        CommWork first = new CommWork("first", null), second = new CommWork("second", null);
        Work chain = ChainedWork.then(first, () -> second);
        first.succeed();
        second.fail(new CommException("rank 0 allReduce #4: timed out"));
        assertThat(chain.isCompleted()).isTrue();
        assertThat(chain.isSuccess()).isFalse();
        assertThatThrownBy(chain::waitFor).hasMessageContaining("timed out");
    }

    /** A later chain whose first finishes early still issues its second only after every earlier chain's. */
    @Test
    @Timeout(10)
    void aSequenceIssuesSecondsInTheOrderTheChainsWereMade() {
        ChainedWork.Sequence seq = new ChainedWork.Sequence();
        CommWork a = new CommWork("a", null), b = new CommWork("b", null), c = new CommWork("c", null);
        java.util.List<String> issued = new java.util.concurrent.CopyOnWriteArrayList<>();
        Work wa = seq.then(a, () -> { issued.add("a"); return done("a2"); });
        Work wb = seq.then(b, () -> { issued.add("b"); return done("b2"); });
        Work wc = seq.then(c, () -> { issued.add("c"); return done("c2"); });
        c.succeed();
        b.succeed();
        assertThat(issued).isEmpty(); // a has not completed: nothing may overtake it
        assertThat(wb.isCompleted()).isFalse();
        a.succeed();
        assertThat(issued).containsExactly("a", "b", "c");
        wa.waitFor();
        wb.waitFor();
        wc.waitFor();
    }

    private static Work done(String name) {
        CommWork w = new CommWork(name, null);
        w.succeed();
        return w;
    }

    /** waitFor(timeout) bounds the whole chain, the wait for an earlier chain of the sequence included. */
    @Test
    @Timeout(10)
    void waitForWithATimeoutBoundsTheWaitForEarlierChains() {
        ChainedWork.Sequence seq = new ChainedWork.Sequence();
        CommWork a = new CommWork("a", null), b = new CommWork("b", null);
        seq.then(a, () -> done("a2"));
        Work wb = seq.then(b, () -> done("b2"));
        b.succeed(); // b's own first step is done, but a's is not: b's second may not be issued yet
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> wb.waitFor(200)).isInstanceOf(CommTimeoutException.class).hasMessageContaining("200 ms");
        assertThat((System.nanoTime() - t0) / 1e6).isBetween(150.0, 2_000.0);
        a.succeed();
        wb.waitFor(1_000);
        assertThat(wb.isSuccess()).isTrue();
    }

    /** A next operation that cannot be issued fails the chain with a CommException naming the first. */
    @Test
    @Timeout(10)
    void aNextOperationThatCannotBeIssuedFailsTheChainWithACommException() {
        CommWork first = new CommWork("rank 0 reduceScatter #5", null);
        Work chain = ChainedWork.then(first, () -> { throw new IllegalStateException("group closed"); });
        first.succeed();
        assertThat(chain.isCompleted()).isTrue();
        assertThat(chain.isSuccess()).isFalse();
        assertThat(chain.exception()).isInstanceOf(CommException.class).hasMessageContaining("reduceScatter #5")
                .hasMessageContaining("group closed");
        assertThatThrownBy(chain::waitFor).isInstanceOf(CommException.class).hasMessageContaining("group closed");
        assertThatThrownBy(() -> chain.waitFor(100)).isInstanceOf(CommException.class).hasMessageContaining("group closed");
    }
}
