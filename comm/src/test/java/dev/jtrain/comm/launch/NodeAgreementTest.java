package dev.jtrain.comm.launch;

import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.store.TcpStore;
import dev.jtrain.comm.store.TcpStoreOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How launchers agree on who runs the next attempt: all together, without a node gone (--min-nodes), or with it back. */
@Timeout(60)
class NodeAgreementTest {
    private final InMemoryStore store = new InMemoryStore(5_000);

    private NodeAgreement node(int n) { return new NodeAgreement(store, n, 3); }

    /** On its own thread (the common pool may have one thread on 2 cores, and these block). */
    private static <T> CompletableFuture<T> async(java.util.function.Supplier<T> s) {
        CompletableFuture<T> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                f.complete(s.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    @Test
    void whenEveryNodeStopsTheNextAttemptHasThemAll() throws Exception {
        var others = List.of(async(() -> node(1).stoppedAndAwaitOthers(0, 5_000, 3)),
                async(() -> node(2).stoppedAndAwaitOthers(0, 5_000, 3)));
        assertThat(node(0).stoppedAndAwaitOthers(0, 5_000, 3)).containsExactly(0, 1, 2);
        for (var f : others) assertThat(f.get()).containsExactly(0, 1, 2);
        assertThat(node(0).members(1)).containsExactly(0, 1, 2);
    }

    @Test
    void aNodeGoneIsLeftOutWhenEnoughRemainAndTakenBackWhenItsLauncherReturns() throws Exception {
        for (int n = 0; n < 3; n++) node(n).started(0);
        var two = async(() -> node(2).stoppedAndAwaitOthers(0, 300, 2));
        assertThat(node(0).stoppedAndAwaitOthers(0, 300, 2)).containsExactly(0, 2); // node 1 never stops
        assertThat(two.get()).containsExactly(0, 2);
        assertThat(node(2).members(1)).containsExactly(0, 2);
        assertThat(node(2).members(1).indexOf(2)).as("node 2 runs as node 1 now").isEqualTo(1);

        // membership carries over; node 1's launcher starts again: without a restart left it can not come back
        node(0).started(1);
        node(2).started(1);
        assertThat(node(0).members(1)).containsExactly(0, 2);
        assertThatThrownBy(() -> node(1).rejoinEpoch(1, false)).isInstanceOf(NodeAgreement.LeftOutException.class)
                .hasMessageContaining("node 1 can not rejoin").hasMessageContaining("[0, 2]").hasMessageContaining("no restart left");
        assertThat(node(0).anyFailure(1)).as("the running attempt goes on").isFalse();

        // with one left, it asks to join: the running attempt stops, and the next one has all three again, in order
        assertThat(node(1).rejoinEpoch(2, false)).isEqualTo(2);
        assertThat(node(0).anyFailure(1)).isTrue();
        assertThat(node(0).failure(1, 1000).what()).contains("node 1's launcher asks to rejoin");
        assertThat(node(0).failure(1, 1000).regroup()).as("nothing failed: the members may save their step first").isTrue();
        // the joiner's join timeout runs out while the members are still stopping their ranks (mid-step): it must
        // not decide the next attempt on its own, it waits for theirs
        var one = async(() -> node(1).stoppedAndAwaitOthers(1, 300, 1));
        Thread.sleep(400);
        var zero = async(() -> node(0).stoppedAndAwaitOthers(1, 5_000, 2));
        assertThat(node(2).stoppedAndAwaitOthers(1, 5_000, 2)).containsExactly(0, 1, 2);
        assertThat(zero.get()).containsExactly(0, 1, 2);
        assertThat(one.get()).containsExactly(0, 1, 2);
    }

    @Test
    void aFailureReportedFirstIsNotMistakenForARegroupNorARegroupForAFailure() {
        node(1).reportFailure(0, 137, "node 1's ranks died | all of them");
        node(2).reportRegroup(0, "node 2 asks to rejoin");
        var f = node(0).failure(0, 1000);
        assertThat(f.regroup()).isFalse();
        assertThat(f.status()).isEqualTo(137);
        assertThat(f.what()).isEqualTo("node 1's ranks died | all of them");

        node(2).reportRegroup(1, "node 2 asks to rejoin");
        node(1).reportFailure(1, 3, "rank 3 exited with status 3");
        assertThat(node(0).failure(1, 1000)).isEqualTo(new NodeAgreement.Failure(1, "node 2 asks to rejoin", true));
    }

    @Test
    void tooFewNodesLeftFailsTheJobNamingTheMissingOnes() {
        assertThatThrownBy(() -> node(0).stoppedAndAwaitOthers(0, 300, 2)).isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("node(s) [1, 2] did not stop").hasMessageContaining("fewer than --min-nodes 2");
    }

    @Test
    void aNodeThatStopsAfterTheOthersDecidedWithoutItIsToldSo() {
        assertThat(node(0).stoppedAndAwaitOthers(0, 200, 1)).containsExactly(0); // nodes 1 and 2 late
        assertThatThrownBy(() -> node(1).stoppedAndAwaitOthers(0, 5_000, 1)).isInstanceOf(NodeAgreement.LeftOutException.class)
                .hasMessageContaining("node 1 was left out of restart 1");
    }

    /**
     * A node whose launcher died (its store connection ended) is left out at once, not after the join timeout, when
     * the others are enough; when they are not, the others still wait for a replacement until the timeout, and a
     * replacement launcher clears its predecessor's mark. Over the TCP store, which is what sees a connection end.
     */
    @Test
    void aNodeWhoseLauncherIsGoneIsLeftOutWithoutWaitingTheJoinTimeout() throws Exception {
        try (TcpStore host = TcpStore.create(TcpStoreOptions.server("127.0.0.1", 0, "t", 5_000));
             TcpStore second = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000))) {
            NodeAgreement n0 = new NodeAgreement(host, 0, 3), n2 = new NodeAgreement(second, 2, 3);
            n0.announce();
            n2.announce();
            TcpStore first = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000));
            new NodeAgreement(first, 1, 3).announce();
            first.close(); // node 1's launcher is killed
            assertThat(n0.gone(1)).as("the store records that node 1's launcher is gone").isTrue();
            assertThat(n0.gone(2)).isFalse();

            // with all 3 nodes required, a gone launcher is waited for (its replacement may come) until the timeout
            var tooFew = async(() -> n2.stoppedAndAwaitOthers(0, 500, 3));
            assertThatThrownBy(() -> n0.stoppedAndAwaitOthers(0, 500, 3)).isInstanceOf(CommTimeoutException.class)
                    .hasMessageContaining("node(s) [1] did not stop").hasMessageContaining("within 500 ms");
            assertThatThrownBy(tooFew::get).hasCauseInstanceOf(CommTimeoutException.class);

            // with 2 enough, it is left out as soon as the others have stopped
            var two = async(() -> n2.stoppedAndAwaitOthers(0, 30_000, 2));
            long t0 = System.nanoTime();
            assertThat(n0.stoppedAndAwaitOthers(0, 30_000, 2)).containsExactly(0, 2);
            assertThat(two.get()).containsExactly(0, 2);
            assertThat((System.nanoTime() - t0) / 1e9).as("seconds: decided without waiting the 30 s join timeout").isLessThan(5);

            try (TcpStore replacement = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000))) {
                new NodeAgreement(replacement, 1, 3).announce();
                assertThat(n0.gone(1)).as("a replacement launcher clears its predecessor's mark").isFalse();
            }
        }
    }
}
