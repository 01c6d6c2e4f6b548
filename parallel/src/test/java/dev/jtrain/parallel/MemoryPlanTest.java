package dev.jtrain.parallel;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@link MemoryPlan}: the ZeRO paper's per-rank bytes for each stage, the build peak and ZeRO-3's gathered units. */
class MemoryPlanTest {
    static final long P = 1_000_000, UNIT = 50_000, ROOT = 200_000, BIG = 150_000, ACT = 3_000_000;

    @Test
    void eachStageHoldsWhatThePaperSays() {
        assertThat(MemoryPlan.predict(0, 4, P, UNIT, ROOT, BIG, 0, 1).state()).isEqualTo(16 * P);
        assertThat(MemoryPlan.predict(1, 4, P, UNIT, ROOT, BIG, 0, 1).state()).isEqualTo(8 * P + 2 * P);
        assertThat(MemoryPlan.predict(2, 4, P, UNIT, ROOT, BIG, 0, 1).state()).isEqualTo(4 * P + 3 * P);
        assertThat(MemoryPlan.predict(3, 4, P, UNIT, ROOT, BIG, 0, 1).state()).isEqualTo(4 * P);
        assertThat(MemoryPlan.predict(3, 1, P, UNIT, ROOT, BIG, 0, 1).state()).as("one process keeps everything").isEqualTo(16 * P);
    }

    /**
     * Accumulating micro-steps, ZeRO-2 keeps each parameter's gradient (noSync backward passes launch nothing) until
     * the last one: 4 Ψ more, worse than ZeRO-1, which accumulates into its flat buffer. The others do not change.
     */
    @Test
    void zero2WithAccumulationKeepsEveryGradientUntilTheLastMicroStep() {
        assertThat(MemoryPlan.predict(2, 4, P, UNIT, ROOT, BIG, 0, 2).state()).isEqualTo(8 * P + 3 * P);
        assertThat(MemoryPlan.predict(2, 4, P, UNIT, ROOT, BIG, 0, 2).state())
                .isGreaterThan(MemoryPlan.predict(1, 4, P, UNIT, ROOT, BIG, 0, 2).state());
        for (int stage : new int[] {0, 1, 3}) {
            assertThat(MemoryPlan.predict(stage, 4, P, UNIT, ROOT, BIG, 0, 4).state())
                    .isEqualTo(MemoryPlan.predict(stage, 4, P, UNIT, ROOT, BIG, 0, 1).state());
        }
    }

    @Test
    void zero3AddsTwoUnitsAndTheRootGatheredAndBuildsWithoutAFlatCopy() {
        MemoryPlan z3 = MemoryPlan.predict(3, 4, P, UNIT, ROOT, BIG, ACT, 1);
        assertThat(z3.gathered()).as("parameters of two units and the root gathered in place, their gradients in N + 1 shard buffers")
                .isEqualTo(4 * (2 * UNIT + ROOT) + 4 * (2 * UNIT + ROOT) * 5 / 4);
        assertThat(z3.activations()).as("the largest weight's gradient goes into its unit's gradient in place").isEqualTo(ACT);
        assertThat(MemoryPlan.predict(2, 4, P, UNIT, ROOT, BIG, ACT, 1).activations())
                .as("ZeRO-2 keeps no gradients: backward computes the largest one whole on its own").isEqualTo(ACT + 4 * BIG);
        assertThat(z3.build()).as("the model as built, plus one shard while each unit's full parameters go").isEqualTo(4 * P + 4 * ROOT / 4);
        assertThat(MemoryPlan.predict(2, 4, P, UNIT, ROOT, BIG, ACT, 1).build()).as("flat weights and gradients").isEqualTo(8 * P);
        assertThat(z3.peak()).isEqualTo(Math.max(z3.build(), 4 * P + z3.gathered() + ACT));
        assertThat(z3.describe()).contains("ZeRO-3 on 4 rank(s)", "gathered units");
    }
}
