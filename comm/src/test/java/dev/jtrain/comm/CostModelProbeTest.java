package dev.jtrain.comm;

import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.algo.CostModelProbe.LinkCosts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

class CostModelProbeTest {
    @Test
    @Timeout(30)
    void everyRankGetsRankZerosMeasuredModel() throws Exception {
        CostModel[] seen = new CostModel[3];
        LocalRanks.run(3, ProcessGroupOptions.defaults(), 10_000, g -> {
            seen[g.rank()] = g.costModel();
            float[] a = {g.rank()};
            g.allReduce(a, 0, 1, ReduceOp.SUM); // and the group works after probing
            assertThat(a[0]).isEqualTo(3f);
        });
        assertThat(seen[0].alphaSeconds()).isPositive();
        assertThat(seen[0].betaSecondsPerByte()).isPositive();
        assertThat(seen[0].gammaSecondsPerByte()).isPositive();
        assertThat(seen[1]).isEqualTo(seen[0]);
        assertThat(seen[2]).isEqualTo(seen[0]);
    }

    /** What a restarted group gets from the job's store ({@link LinkCostCache}): used as is, nothing measured. */
    @Test
    @Timeout(30)
    void figuresFromAnEarlierStartAreUsedWithoutMeasuring() throws Exception {
        CostModel earlier = new CostModel(7e-6, 3e-10, 2e-11, 1 << 20);
        CostModel[] seen = new CostModel[3];
        boolean[] measured = new boolean[3];
        LocalRanks.run(3, ProcessGroupOptions.defaults().withLinkCosts(new LinkCosts(earlier, null)), 10_000, g -> {
            seen[g.rank()] = g.costModel();
            measured[g.rank()] = g.measuredLinkCosts() != null;
            float[] a = {g.rank()};
            g.allReduce(a, 0, 1, ReduceOp.SUM);
            assertThat(a[0]).isEqualTo(3f);
        });
        assertThat(seen).containsOnly(earlier);
        assertThat(measured).containsOnly(false);
    }

    /** Figures without a link class the group has (here: within a host) are measured again, on every rank alike. */
    @Test
    @Timeout(30)
    void figuresMissingALinkClassOfTheGroupAreMeasuredAgain() throws Exception {
        CostModel interOnly = new CostModel(7e-6, 3e-10, 2e-11, 1 << 20);
        CostModel[] seen = new CostModel[3];
        LinkCosts[] measured = new LinkCosts[3];
        LocalRanks.run(3, ProcessGroupOptions.defaults().withLinkCosts(new LinkCosts(null, interOnly)), 10_000, g -> {
            seen[g.rank()] = g.costModel();
            measured[g.rank()] = g.measuredLinkCosts();
        });
        assertThat(seen[0]).isNotEqualTo(interOnly);
        assertThat(seen[1]).isEqualTo(seen[0]);
        assertThat(seen[2]).isEqualTo(seen[0]);
        assertThat(measured[0].intraHost()).isEqualTo(seen[0]);
    }

    /** Only rank 0 looks in the job's store: its answer, not each rank's options, decides for the whole group. */
    @Test
    @Timeout(30)
    void rankZerosFiguresDecideForEveryRank() throws Exception {
        CostModel earlier = new CostModel(7e-6, 3e-10, 2e-11, 1 << 20);
        CostModel[] seen = new CostModel[3];
        LocalRanks.run(3, rank -> rank == 0 ? ProcessGroupOptions.defaults().withLinkCosts(new LinkCosts(earlier, null))
                : ProcessGroupOptions.defaults(), 10_000, g -> seen[g.rank()] = g.costModel());
        assertThat(seen).containsOnly(earlier);
        seen[0] = null;
        LocalRanks.run(3, rank -> rank == 0 ? ProcessGroupOptions.defaults()
                : ProcessGroupOptions.defaults().withLinkCosts(new LinkCosts(earlier, null)), 10_000, g -> seen[g.rank()] = g.costModel());
        assertThat(seen[0]).isNotEqualTo(earlier);
        assertThat(seen).containsOnly(seen[0]);
    }
}
