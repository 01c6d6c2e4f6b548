package dev.jtrain.comm;

import dev.jtrain.comm.topology.HostTopology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link HostGroups}: the host and rail sub-groups a declared topology gives, and their collectives. */
class HostGroupsTest {
    static HostTopology hosts(int... hostOfRank) {
        String[] names = IntStream.of(hostOfRank).mapToObj(h -> "node" + h).toArray(String[]::new);
        return HostTopology.of(names, names);
    }

    /** Ranks placed host-major (0,0,1,1), interleaved (0,1,0,1) and 3 hosts × 2 in a scrambled order. */
    @ParameterizedTest
    @ValueSource(strings = {"0,0,1,1", "0,1,0,1", "2,0,1,0,2,1"})
    @Timeout(30)
    void hostAndRailGroupsFollowTheTopology(String layout) throws Exception {
        int[] hostOf = java.util.Arrays.stream(layout.split(",")).mapToInt(Integer::parseInt).toArray();
        HostTopology t = hosts(hostOf);
        LocalRanks.run(hostOf.length, LocalRanks.options().withTopology(t), 10_000, world -> {
            HostGroups g = HostGroups.split(world);
            int me = world.rank();
            int[] mine = t.ranksOn(t.hostOf(me));
            assertThat(g.host().size()).isEqualTo(mine.length);
            assertThat(g.host().worldRank(g.host().rank())).isEqualTo(me);
            assertThat(g.host().rank()).as("host rank = local index: the shard this rank holds").isEqualTo(t.localIndex(me));
            assertThat(g.rail().size()).isEqualTo(t.hosts());
            assertThat(g.spansHosts()).isTrue();
            // the host group sums the ranks of my host; the rail the ranks with my local index on every host
            float[] h = {me + 1}, r = {me + 1};
            Work wh = g.host().allReduceAsync(h, 0, 1, ReduceOp.SUM);
            Work wr = g.rail().allReduceAsync(r, 0, 1, ReduceOp.SUM);
            wh.waitFor();
            wr.waitFor();
            assertThat(h[0]).isEqualTo((float) IntStream.of(mine).map(x -> x + 1).sum());
            int local = t.localIndex(me), rail = 0;
            for (int k = 0; k < t.hosts(); k++) rail += t.ranksOn(k)[local] + 1;
            assertThat(r[0]).isEqualTo((float) rail);
            for (int k = 0; k < g.rail().size(); k++) assertThat(t.localIndex(g.rail().worldRank(k))).isEqualTo(local);
            assertThat(g.host().topology().spansHosts()).isFalse();
        });
    }

    @Test
    @Timeout(30)
    void oneHostGivesTheWholeGroupAndASingletonRail() throws Exception {
        LocalRanks.run(3, LocalRanks.options().withTopology(hosts(0, 0, 0)), 10_000, world -> {
            HostGroups g = HostGroups.split(world);
            assertThat(g.host().size()).isEqualTo(3);
            assertThat(g.rail().size()).isEqualTo(1);
            assertThat(g.spansHosts()).isFalse();
        });
    }

    @Test
    @Timeout(30)
    void unevenHostsAreRefusedNamingTheirCounts() throws Exception {
        LocalRanks.run(3, LocalRanks.options().withTopology(hosts(0, 0, 1)), 10_000, world ->
                assertThatThrownBy(() -> HostGroups.split(world)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("node0: 2").hasMessageContaining("node1: 1"));
    }
}
