package dev.jtrain.tensor;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StepArenaTest {
    @Test
    void arraysAreReusedAcrossScopesAndHandedOutZeroed() {
        StepArena arena = new StepArena();
        float[] first, second;
        try (var s = arena.open()) {
            first = StepArena.floats(4096);
            second = StepArena.floats(4096);
            first[7] = 3f;
            second[7] = 4f;
            assertThat(second != first).as("two live arrays are distinct").isTrue();
        }
        try (var s = arena.open()) {
            float[] again = StepArena.floats(4096);
            assertThat(again == first || again == second).as("reused from the pool").isTrue();
            assertThat(again[7]).isZero();
        }
        assertThat(arena.pooledBytes()).isEqualTo(2L * 4096 * Float.BYTES);
    }

    @Test
    void outsideAScopeArraysAreFreshAndScopesDoNotNest() {
        assertThat(StepArena.floats(4096) != StepArena.floats(4096)).isTrue();
        StepArena arena = new StepArena();
        try (var s = arena.open()) {
            assertThatThrownBy(arena::open).isInstanceOf(IllegalStateException.class);
        }
    }
}
