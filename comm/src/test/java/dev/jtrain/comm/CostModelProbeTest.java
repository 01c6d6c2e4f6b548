package dev.jtrain.comm;

import dev.jtrain.comm.algo.CostModel;
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
}
