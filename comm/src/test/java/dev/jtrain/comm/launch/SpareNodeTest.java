package dev.jtrain.comm.launch;

import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.store.TcpStore;
import dev.jtrain.comm.store.TcpStoreOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A hot spare takes the place of a node whose launcher is lost, and of no other: not of a live node whose rank failed,
 * not of node 0, not after the job ended; and it never runs a node together with that node's own restarted launcher.
 */
@Timeout(60)
class SpareNodeTest {
    private static CompletableFuture<SpareNode.Wait> waiting(SpareNode spare) {
        CompletableFuture<SpareNode.Wait> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> f.complete(spare.awaitLostNode(() -> { })));
        return f;
    }

    private static void assertStillWaiting(CompletableFuture<SpareNode.Wait> f) {
        assertThatThrownBy(() -> f.get(3 * SpareNode.POLL_MS + 300, TimeUnit.MILLISECONDS)).as("the spare keeps waiting")
                .isInstanceOf(TimeoutException.class);
    }

    @Test
    void aSpareTakesThePlaceOfANodeWhoseLauncherIsLostAndOfNoOther() throws Exception {
        try (TcpStore host = TcpStore.create(TcpStoreOptions.server("127.0.0.1", 0, "t", 5_000));
             TcpStore spareClient = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000));
             TcpStore second = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000))) {
            NodeAgreement n0 = new NodeAgreement(host, 0, 3), n2 = new NodeAgreement(second, 2, 3);
            n0.announce();
            n2.announce();
            TcpStore first = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000));
            new NodeAgreement(first, 1, 3).announce();
            var spare = waiting(new SpareNode(spareClient, 3, 2, "spare on jt-node4#1"));
            assertStillWaiting(spare); // before the job's first attempt
            n0.started(0);
            n2.started(0);
            new NodeAgreement(first, 1, 3).started(0);
            assertStillWaiting(spare);

            // a rank fails on live node 2: its own launcher restarts it
            n2.reportFailure(0, 3, "rank 5 on node 2 exited with status 3");
            assertStillWaiting(spare);

            first.close(); // node 1's launcher is lost with its host
            SpareNode.Wait w = spare.get(5, TimeUnit.SECONDS);
            assertThat(w.node()).isEqualTo(OptionalInt.of(1));
            assertThat(w.why()).contains("node 1's launcher was lost");

            // node 1's own launcher, started again, finds its place taken and leaves
            try (TcpStore late = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000))) {
                assertThatThrownBy(() -> new NodeAgreement(late, 1, 3).rejoinEpoch(2, false)).isInstanceOf(NodeAgreement.LeftOutException.class)
                        .hasMessageContaining("node 1's place after attempt 0 was taken by the launcher spare on jt-node4 (a spare)");
            }
            // the spare, as node 1, joins the next attempt and says why attempt 0 ended
            NodeAgreement asNode1 = new NodeAgreement(spareClient, 1, 3, "spare on jt-node4#1");
            asNode1.announce();
            assertThat(n0.gone(1)).as("the spare holds node 1's store connection now").isFalse();
            assertThat(asNode1.rejoinEpoch(2, true)).isEqualTo(1);
        }
    }

    @Test
    void nodeZeroIsNeverTakenOverAndAnEndedJobEndsTheWait() throws Exception {
        try (TcpStore host = TcpStore.create(TcpStoreOptions.server("127.0.0.1", 0, "t", 5_000));
             TcpStore spareClient = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000))) {
            TcpStore zero = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 5_000));
            new NodeAgreement(zero, 0, 2).announce();
            new NodeAgreement(host, 1, 2).announce();
            new NodeAgreement(host, 0, 2).started(0);
            var spare = waiting(new SpareNode(spareClient, 2, 1, "spare#1"));
            zero.close(); // node 0's launcher connection ends (in a real job the store itself would go with it)
            assertStillWaiting(spare);

            new NodeAgreement(host, 0, 2).reportDone(0);
            new NodeAgreement(host, 1, 2).reportDone(0);
            SpareNode.Wait w = spare.get(5, TimeUnit.SECONDS);
            assertThat(w.node()).isEmpty();
            assertThat(w.why()).isEqualTo("the job finished");
        }
    }

    @Test
    void withNoRestartLeftOrNoStoreTheSpareIsNotNeeded() throws Exception {
        InMemoryStore store = new InMemoryStore(5_000);
        NodeAgreement n0 = new NodeAgreement(store, 0, 2);
        n0.started(0);
        n0.started(1);
        n0.reportFailure(1, 1, "rank 0 on node 0 exited with status 1");
        SpareNode.Wait w = new SpareNode(store, 2, 1, "spare#1").awaitLostNode(() -> { });
        assertThat(w.node()).isEmpty();
        assertThat(w.why()).contains("no restart left (1 of --max-restarts 1 used)");

        TcpStore host = TcpStore.create(TcpStoreOptions.server("127.0.0.1", 0, "t", 2_000));
        try (TcpStore spareClient = TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), "t", 2_000))) {
            var spare = waiting(new SpareNode(spareClient, 2, 1, "spare#2"));
            host.close(); // node 0 went with the job's store
            SpareNode.Wait gone = spare.get(20, TimeUnit.SECONDS);
            assertThat(gone.node()).isEmpty();
            assertThat(gone.why()).contains("the job's store is gone");
        }
    }

    @Test
    void twoSparesNeverTakeTheSameNode() {
        InMemoryStore store = new InMemoryStore(5_000);
        NodeAgreement a = new NodeAgreement(store, -1, 3, "spare a#1"), b = new NodeAgreement(store, -1, 3, "spare b#1");
        assertThat(a.claim(0, 2)).isEqualTo("spare a#1");
        assertThat(b.claim(0, 2)).as("the first claim wins").isEqualTo("spare a#1");
        assertThat(b.claim(0, 1)).isEqualTo("spare b#1");
        assertThat(b.claim(1, 2)).as("a claim holds for one attempt").isEqualTo("spare b#1");
    }
}
