package dev.jtrain.comm.algo;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
                for (int p = 1; p <= 9; p++) {
                    double small = a.predictSeconds(SHM, p, 1024), big = a.predictSeconds(SHM, p, 1 << 26);
                    assertThat(small).as(a.name()).isFinite().isGreaterThanOrEqualTo(0);
                    if (p > 1 && e.getKey() != Collective.BARRIER) assertThat(big).as(a.name() + " p=" + p).isGreaterThan(small);
                }
            }
        }
    }
}
