package dev.jtrain.parallel;

import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.nn.Module;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class BucketPlanTest {
    static final long MIB = 1L << 20;

    /** The auto cap is the bytes a link moves in about 10 ms: PyTorch's 25 MiB on shared memory, ~2.4 MB at 2 Gbit/s. */
    @Test
    void autoBucketFollowsTheSlowestLink() {
        CostModel shm = CostModel.typicalSharedMemory(1 << 20);
        CostModel twoGbit = new CostModel(100e-6, 8.0 / 2e9, 1e-10, 1 << 20);
        CostModel hundredMbit = new CostModel(100e-6, 8.0 / 100e6, 1e-10, 1 << 20);
        assertThat(BucketPlan.autoBucketBytes(shm)).isEqualTo(25 * MIB);
        assertThat((double) BucketPlan.autoBucketBytes(twoGbit)).isCloseTo(2.5e6, within(1e3));
        assertThat(BucketPlan.autoBucketBytes(hundredMbit)).isEqualTo(MIB); // α would dominate smaller buckets
        assertThat(BucketPlan.autoBucketBytes(null)).isEqualTo(25 * MIB);
    }

    /** Ten parameters of 4,000 bytes each, registered in order p0 .. p9 (backward produces p9's gradient first). */
    private static FlatParameters tenParameters() {
        Module m = new Module() {
            {
                for (int i = 0; i < 10; i++) registerParameter("p" + i, Tensor.zeros(1000));
            }
        };
        return FlatParameters.of(m);
    }

    private static List<List<Integer>> slotsByBucket(BucketPlan plan) {
        return plan.buckets().stream()
                .map(b -> java.util.stream.IntStream.rangeClosed(b.firstSlot(), b.lastSlot()).boxed().toList()).toList();
    }

    /**
     * The last buckets taper (1/16 of the cap or the first bucket's size, doubling up to half the cap), so the
     * collectives that start as backward ends are small; the rest is PyTorch's greedy plan from the other end.
     * Buckets come in launch order and cover every slot once, each a contiguous range.
     */
    @Test
    void theLastBucketsTaperSoTheExposedCollectiveIsSmall() {
        BucketPlan plan = new BucketPlan(tenParameters(), 4000, 32000);
        assertThat(slotsByBucket(plan)).containsExactly(
                List.of(9), List.of(7, 8), List.of(3, 4, 5, 6), List.of(1, 2), List.of(0));
        for (int i = 0; i < plan.buckets().size(); i++) {
            BucketPlan.Bucket b = plan.buckets().get(i);
            assertThat(b.index()).isEqualTo(i);
            for (int s = b.firstSlot(); s <= b.lastSlot(); s++) assertThat(plan.bucketOf(s)).isEqualTo(i);
        }
    }

    /** Without room for a taper (the first bucket's size is over half the cap) the plan is PyTorch's greedy one. */
    @Test
    void withoutRoomForATaperThePlanIsGreedyFromTheFirstGradients() {
        BucketPlan plan = new BucketPlan(tenParameters(), 4000, 7000);
        assertThat(slotsByBucket(plan)).containsExactly(List.of(9), List.of(8), List.of(7), List.of(6), List.of(5),
                List.of(4), List.of(3), List.of(2), List.of(1), List.of(0));
        BucketPlan wide = new BucketPlan(tenParameters(), 4000, 8000);
        assertThat(slotsByBucket(wide)).containsExactly(List.of(9), List.of(7, 8), List.of(5, 6), List.of(3, 4),
                List.of(1, 2), List.of(0));
    }
}
