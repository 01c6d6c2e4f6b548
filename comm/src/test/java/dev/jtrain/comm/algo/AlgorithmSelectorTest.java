package dev.jtrain.comm.algo;

import dev.jtrain.comm.topology.HostTopology;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

class AlgorithmSelectorTest {
    static final CostModel SHM = new CostModel(5e-6, 1.0 / 5e9, 1.0 / 10e9, 512 * 1024);

    @Test
    void parsesJtrainAlgoLikeNcclAlgoAndRejectsUnknownNames() {
        Map<Collective, String> m = AlgorithmSelector.parse("allreduce:hd, broadcast:chain,all_gather:rd");
        assertThat(m).containsEntry(Collective.ALL_REDUCE, "halvingdoubling").containsEntry(Collective.BROADCAST, "chain")
                .containsEntry(Collective.ALL_GATHER, "recursivedoubling");
        assertThatThrownBy(() -> AlgorithmSelector.parse("allreduce:fastest")).hasMessageContaining("unknown allreduce algorithm 'fastest'")
                .hasMessageContaining("ring");
        assertThatThrownBy(() -> AlgorithmSelector.parse("allreduce")).hasMessageContaining("collective:algorithm");
        assertThat(AlgorithmSelector.parse(" ")).isEmpty();
    }

    @Test
    void forcedAlgorithmWinsAndOtherwiseTheCheapestPredictionIsChosen() {
        AlgorithmSelector auto = new AlgorithmSelector(Map.of());
        assertThat(auto.select(Collective.ALL_REDUCE, 4, 64 << 20, SHM).name()).isEqualTo("ring");
        String small = auto.select(Collective.ALL_REDUCE, 8, 4096, SHM).name();
        assertThat(small).isIn("halvingdoubling", "tree", "doubletree", "recursivedoubling");
        assertThat(auto.select(Collective.BROADCAST, 8, 256 << 20, SHM).name()).isEqualTo("chain");
        assertThat(auto.select(Collective.BROADCAST, 8, 64, SHM).name()).isEqualTo("binomial");
        // gather/scatter: log p messages win when blocks are small, direct streams (no store and forward) when large
        assertThat(auto.select(Collective.GATHER, 8, 4096, SHM).name()).isEqualTo("binomial");
        assertThat(auto.select(Collective.SCATTER, 8, 4096, SHM).name()).isEqualTo("binomial");
        assertThat(auto.select(Collective.GATHER, 8, 64 << 20, SHM).name()).isEqualTo("linear");
        assertThat(auto.select(Collective.SCATTER, 8, 64 << 20, SHM).name()).isEqualTo("linear");
        AlgorithmSelector forced = new AlgorithmSelector(Map.of(Collective.ALL_REDUCE, "naive"));
        assertThat(forced.select(Collective.ALL_REDUCE, 4, 64 << 20, SHM).name()).isEqualTo("naive");
    }

    @Test
    void everyPredictionIsFiniteAndGrowsWithSize() {
        for (var e : AlgorithmSelector.ALL.entrySet()) {
            for (Algorithm a : e.getValue()) {
                if (a instanceof HierarchicalAllReduce || a instanceof HierarchicalAllGather || a instanceof HierarchicalReduceScatter)
                    continue; // need hosts: see the fabric tests (below, and HierarchicalGatherScatterTest)
                for (int p = 1; p <= 9; p++) {
                    double small = a.predictSeconds(SHM, p, 1024), big = a.predictSeconds(SHM, p, 1 << 26);
                    assertThat(small).as(a.name()).isFinite().isGreaterThanOrEqualTo(0);
                    if (p > 1 && e.getKey() != Collective.BARRIER) assertThat(big).as(a.name() + " p=" + p).isGreaterThan(small);
                }
            }
        }
    }

    /** 2 Gbit/s between hosts, shared memory within. */
    static final CostModel TCP_2G = new CostModel(50e-6, 8.0 / 2e9, 1.0 / 10e9, 512 * 1024);

    static Fabric hosts(int... hostOfRank) {
        String[] names = Arrays.stream(hostOfRank).mapToObj(h -> "h" + h).toArray(String[]::new);
        return new Fabric(HostTopology.of(names, names), SHM, TCP_2G);
    }

    @Test
    void acrossHostsTheHostLinkVolumeDecides() {
        Fabric twoByTwo = hosts(0, 0, 1, 1);
        long n = 64 << 20;
        double link = n * TCP_2G.betaSecondsPerByte();
        // Per host link each way: hierarchical n, ring 1.5n, recursive halving 2n (its first step crosses with every rank).
        assertThat(HierarchicalAllReduce.INSTANCE.predictSeconds(twoByTwo, 4, n) / link).isBetween(1.0, 1.1);
        assertThat(RingAllReduce.INSTANCE.predictSeconds(twoByTwo, 4, n) / link).isBetween(1.5, 1.6);
        assertThat(HalvingDoublingAllReduce.INSTANCE.predictSeconds(twoByTwo, 4, n) / link).isBetween(2.0, 2.1);
        AlgorithmSelector auto = new AlgorithmSelector(Map.of());
        assertThat(auto.select(Collective.ALL_REDUCE, 4, n, twoByTwo).name()).isEqualTo("hierarchical");
        assertThat(auto.select(Collective.ALL_REDUCE, 6, n, hosts(0, 0, 0, 1, 1, 1)).name()).isEqualTo("hierarchical");
        // One host, one rank per host or uneven hosts: nothing to gain, never chosen.
        assertThat(auto.select(Collective.ALL_REDUCE, 4, n, Fabric.singleHost(4, SHM)).name()).isNotEqualTo("hierarchical");
        assertThat(auto.select(Collective.ALL_REDUCE, 2, n, hosts(0, 1)).name()).isNotEqualTo("hierarchical");
        assertThat(HierarchicalAllReduce.INSTANCE.predictSeconds(hosts(0, 0, 1), 3, n)).isInfinite();
    }

    @Test
    void anOffHostSenderSharesItsHostLinkWithTheOthersOfItsHost() {
        Fabric f = hosts(0, 0, 1, 1);
        double bytes = 1 << 20, one = TCP_2G.message(bytes);
        assertThat(f.exchangeSeconds(r -> r ^ 2, bytes)).isCloseTo(2 * bytes * TCP_2G.betaSecondsPerByte() + 2 * TCP_2G.alphaSeconds(),
                offset(1e-9)); // both ranks of a host cross at once
        assertThat(f.exchangeSeconds(r -> (r + 1) % 4, bytes)).isCloseTo(one, offset(1e-9));
        assertThat(f.exchangeSeconds(r -> r ^ 1, bytes)).isCloseTo(SHM.message(bytes), offset(1e-9));
    }
}
