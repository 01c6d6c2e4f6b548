package dev.jtrain.comm.topology;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class HostTopologyTest {
    /** Ranks 0,1,4 on a; 2,3 on b; hosts numbered by their lowest rank. */
    private static final HostTopology T = HostTopology.of(new String[] {"a/1", "a/1", "b/2", "b/2", "a/1"},
            new String[] {"a", "a", "b", "b", "a"});

    @Test
    void groupsRanksByIdentityInOrderOfTheirLowestRank() {
        assertThat(T.hosts()).isEqualTo(2);
        assertThat(T.hostNames()).containsExactly("a", "b");
        assertThat(T.ranksOn(0)).containsExactly(0, 1, 4);
        assertThat(T.ranksOn(1)).containsExactly(2, 3);
        assertThat(T.localIndex(4)).isEqualTo(2);
        assertThat(T.localIndex(3)).isEqualTo(1);
        assertThat(T.linkClass(0, 4)).isEqualTo(LinkClass.INTRA_HOST);
        assertThat(T.linkClass(1, 2)).isEqualTo(LinkClass.INTER_HOST);
        assertThat(T.spansHosts()).isTrue();
        assertThat(T.toString()).isEqualTo("a[0, 1, 4], b[2, 3]");
    }

    @Test
    void sameNameOnDifferentKernelsIsTwoHosts() {
        HostTopology t = HostTopology.of(new String[] {"node/boot1", "node/boot2"}, new String[] {"node", "node"});
        assertThat(t.hosts()).isEqualTo(2);
        assertThat(t.sameHost(0, 1)).isFalse();
    }

    @Test
    void picksOnePairPerLinkClass() {
        assertThat(T.intraHostPair()).containsExactly(0, 1);
        assertThat(T.interHostPair()).containsExactly(0, 2);
        HostTopology onePerHost = HostTopology.of(new String[] {"a", "b"}, new String[] {"a", "b"});
        assertThat(onePerHost.intraHostPair()).isNull();
        assertThat(HostTopology.singleHost(3, "h").interHostPair()).isNull();
    }

    @Test
    void subsetsKeepTheHostsOfTheirMembers() {
        HostTopology sub = T.subset(new int[] {1, 2, 4});
        assertThat(sub.hostNames()).containsExactly("a", "b");
        assertThat(sub.ranksOn(0)).containsExactly(0, 2);
        assertThat(sub.ranksOn(1)).containsExactly(1);
        assertThat(T.subset(new int[] {2, 3}).hostNames()).isEqualTo(List.of("b"));
    }
}
