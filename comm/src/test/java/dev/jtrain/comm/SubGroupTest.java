package dev.jtrain.comm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class SubGroupTest {
    @Test
    @Timeout(30)
    void subGroupsRunTheirOwnCollectivesConcurrentlyWithTheWorld() throws Exception {
        LocalRanks.run(5, LocalRanks.options(), 10_000, world -> {
            Optional<ProcessGroup> even = world.newGroup(new int[] {4, 0, 2});
            Optional<ProcessGroup> odd = world.newGroup(new int[] {1, 3});
            boolean isEven = world.rank() % 2 == 0;
            assertThat(even.isPresent()).isEqualTo(isEven);
            assertThat(odd.isPresent()).isEqualTo(!isEven);
            ProcessGroup sub = (isEven ? even : odd).orElseThrow();
            assertThat(sub.size()).isEqualTo(isEven ? 3 : 2);
            assertThat(sub.rank()).isEqualTo(world.rank() / 2);
            assertThat(sub.worldRank(sub.rank())).isEqualTo(world.rank());
            for (int round = 0; round < 20; round++) {
                float[] w = {world.rank() + 1};
                float[] s = {world.rank() + 1};
                Work ws = sub.allReduceAsync(s, 0, 1, ReduceOp.SUM);
                Work ww = world.allReduceAsync(w, 0, 1, ReduceOp.SUM);
                ww.waitFor();
                ws.waitFor();
                assertThat(w[0]).isEqualTo(15f);
                assertThat(s[0]).isEqualTo(isEven ? 1 + 3 + 5 : 2 + 4);
            }
            // a sub-group of a sub-group, and point-to-point inside a sub-group
            if (isEven) {
                Optional<ProcessGroup> pair = sub.newGroup(new int[] {1, 2});
                assertThat(pair.isPresent()).isEqualTo(sub.rank() >= 1);
                if (pair.isPresent()) {
                    float[] v = {world.rank()};
                    pair.get().broadcast(v, 0, 1, 1);
                    assertThat(v[0]).isEqualTo(4f);
                    pair.get().close();
                }
            } else {
                float[] v = new float[3];
                if (sub.rank() == 0) sub.send(new float[] {7, 8, 9}, 0, 3, 1, 5);
                else {
                    sub.recv(v, 0, 3, 0, 5);
                    assertThat(v).containsExactly(7, 8, 9);
                }
            }
            sub.close();
        });
    }

    /**
     * Aborting a group (what the heartbeat does on a hung peer) fails its sub-groups' running work at once with the
     * same cause, not later with "transport closed" naming a neighbour.
     */
    @Test
    @Timeout(30)
    void anAbortReachesSubGroupsWithItsCause() throws Exception {
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        LocalRanks.run(2, LocalRanks.options(), 20_000, world -> {
            ProcessGroup sub = world.newGroup(new int[] {0, 1}).orElseThrow();
            if (world.rank() == 1) { // never joins the all-reduce: rank 0's waits until the abort
                done.await();
                return;
            }
            Work w = sub.allReduceAsync(new float[] {1}, 0, 1, ReduceOp.SUM);
            long t0 = System.nanoTime();
            world.abort(new CommException("rank 1 on host h1 sent no heartbeat for 4.0 s"), 2_000); // links open 2 s more
            try {
                org.assertj.core.api.Assertions.assertThatThrownBy(w::waitFor).isInstanceOf(CommException.class)
                        .hasMessageContaining("no heartbeat");
                assertThat((System.nanoTime() - t0) / 1e9).as("seconds until the sub-group's work failed").isLessThan(5.0);
            } finally {
                done.countDown();
            }
        });
    }
    /** A sub-group's failure names its peer by the sub-group's rank and by its world rank (whose log to read). */
    @Test
    @Timeout(30)
    void aSubGroupsFailureNamesThePeersWorldRank() throws Exception {
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        LocalRanks.run(3, LocalRanks.options().withTimeoutMs(1000), 1000, world -> {
            Optional<ProcessGroup> pair = world.newGroup(new int[] {0, 2});
            if (world.rank() == 1) return;
            if (world.rank() == 2) { // never joins
                done.await();
                return;
            }
            try {
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> pair.orElseThrow().allReduce(new float[] {1}, 0, 1, ReduceOp.SUM))
                        .isInstanceOf(CommException.class).hasMessageContaining("peer rank 1 (world rank 2)");
            } finally {
                done.countDown();
            }
        });
    }
}
