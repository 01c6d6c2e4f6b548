package dev.jtrain.comm.launch;

import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.store.InMemoryStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How launchers agree on who runs the next attempt: all together, or without a node gone for good (--min-nodes). */
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
    void aNodeGoneForGoodIsLeftOutWhenEnoughRemainAndTheRestAreRenumberedInOrder() throws Exception {
        for (int n = 0; n < 3; n++) node(n).started(0);
        var two = async(() -> node(2).stoppedAndAwaitOthers(0, 300, 2));
        assertThat(node(0).stoppedAndAwaitOthers(0, 300, 2)).containsExactly(0, 2); // node 1 never stops
        assertThat(two.get()).containsExactly(0, 2);
        assertThat(node(2).members(1)).containsExactly(0, 2);
        assertThat(node(2).members(1).indexOf(2)).as("node 2 runs as node 1 now").isEqualTo(1);

        // the next failure: membership carries over, and a node left out can not rejoin a running job
        node(0).started(1);
        node(2).started(1);
        assertThat(node(0).members(1)).containsExactly(0, 2);
        assertThatThrownBy(() -> node(1).rejoinEpoch()).isInstanceOf(NodeAgreement.LeftOutException.class)
                .hasMessageContaining("node 1 was left out").hasMessageContaining("[0, 2]");
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
}
