package dev.jtrain.parallel;

import dev.jtrain.comm.algo.CostModel;
import org.junit.jupiter.api.Test;

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
}
