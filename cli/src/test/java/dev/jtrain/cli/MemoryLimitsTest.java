package dev.jtrain.cli;

import dev.jtrain.parallel.MemoryPlan;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A plan fits when its whole working set fits the heap and what it keeps between steps fits the old generation. */
class MemoryLimitsTest {
    static final long GIB = 1L << 30;

    /** state + gathered stay from step to step; activations come and go. */
    static MemoryPlan plan(double state, double gathered, double activations) {
        return new MemoryPlan(3, 4, 1, 0, (long) (state * GIB), (long) (gathered * GIB), (long) (activations * GIB));
    }

    @Test
    void aFixedOldGenerationMustHoldWhatStaysFromStepToStep() {
        MemoryLimits parallelGc = MemoryLimits.of((long) (4.3 * GIB), (long) (3.9 * GIB), -1, 4);
        assertThat(parallelGc.fits(plan(2.9, 0.85, 0.15))).as("3.75 GiB lasting within 97% of 3.9").isTrue();
        assertThat(parallelGc.fits(plan(2.9, 0.95, 0.15))).as("3.85 GiB lasting beyond 97% of 3.9, though the heap has room").isFalse();
        assertThat(parallelGc.fits(plan(2.0, 0.5, 1.8))).as("4.3 GiB in all beyond 97% of the heap").isFalse();
        assertThat(parallelGc.describe()).contains("old generation, 3.90 GiB");
        MemoryPlan bigBuild = new MemoryPlan(2, 4, 1, (long) (3.85 * GIB), (long) (2.0 * GIB), 0, (long) (0.1 * GIB));
        assertThat(parallelGc.fits(bigBuild)).as("the model as built lives in the old generation too").isFalse();
    }

    @Test
    void withoutAFixedSplitTheHeapLeavesTenPercentToTheCollector() {
        MemoryLimits g1 = MemoryLimits.of(4 * GIB, 4 * GIB, -1, 4);
        assertThat(g1.lasting()).isEqualTo(g1.total()).isEqualTo((long) (0.9 * 4 * GIB));
        assertThat(MemoryLimits.of(4 * GIB, -1, -1, 4).total()).isEqualTo((long) (0.9 * 4 * GIB));
    }

    @Test
    void ranksOnAHostShareWhatItHasAvailable() {
        MemoryLimits tight = MemoryLimits.of(8 * GIB, 7 * GIB, 12 * GIB, 4);
        assertThat(tight.total()).as("97% of 12 GiB / 4").isEqualTo((long) (0.97 * 3 * GIB));
        assertThat(tight.lasting()).isEqualTo(tight.total());
        assertThat(tight.describe()).contains("12.00 GiB available / 4 rank(s)");
    }
}
