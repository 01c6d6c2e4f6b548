package dev.jtrain.tensor;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
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

    @Test
    void aReleasedArrayIsHandedOutAgainWithinTheScopeOnlyAfterItsLastHolder() {
        StepArena arena = new StepArena();
        try (var s = arena.open()) {
            float[] a = StepArena.floats(4096);
            a[5] = 1f;
            StepArena.retain(a);          // e.g. a node saving it for backward
            StepArena.release(a);         // the creator is done with it
            float[] b = StepArena.floats(4096);
            assertThat(b != a).as("still held by one").isTrue();
            StepArena.release(a);         // the node's backward ran
            float[] c = StepArena.floats(4096);
            assertThat(c == a).as("reused at once").isTrue();
            assertThat(c[5]).as("handed out zeroed").isZero();
            assertThat(arena.pooledBytes()).as("two arrays ever made").isEqualTo(2L * 4096 * Float.BYTES);
            int[] w = StepArena.ints(2048);
            StepArena.release(w);
            assertThat(StepArena.ints(2048) == w).as("int arrays pooled too").isTrue();
        }
    }

    @Test
    void peakLentBytesCountsWhatIsOutAtOnce() {
        StepArena arena = new StepArena();
        try (var s = arena.open()) {
            for (int i = 0; i < 10; i++) StepArena.release(StepArena.floats(4096));
            assertThat(arena.peakLentBytes()).as("one at a time").isEqualTo(4096L * Float.BYTES);
            float[] a = StepArena.floats(4096), b = StepArena.floats(8192);
            assertThat(arena.peakLentBytes()).isEqualTo((4096L + 8192) * Float.BYTES);
        }
        try (var s = arena.open()) {
            assertThat(arena.peakLentBytes()).as("reset when a scope opens").isZero();
        }
    }

    @Test
    void arraysTheScopeDidNotHandOutAreLeftAlone() {
        StepArena arena = new StepArena();
        float[] outside = StepArena.floats(4096);
        try (var s = arena.open()) {
            StepArena.release(outside);
            StepArena.release(outside);
            assertThat(StepArena.floats(4096) != outside).as("never pooled").isTrue();
            StepArena.release(new float[16]); // too small to be pooled: ignored
        }
        StepArena.release(outside); // no scope: nothing happens
    }

    @Test
    void settleCollectsOnceThePoolHasGrownAndNotAgainUntilItGrowsMore() {
        StepArena arena = new StepArena();
        try (var s = arena.open()) {
            StepArena.floats(1 << 20); // 4 MiB: below what is worth a full collection
        }
        long before = collections();
        assertThat(arena.settle()).as("4 MiB pooled").isFalse();
        try (var s = arena.open()) {
            for (int i = 0; i < 5; i++) StepArena.floats(1 << 20); // the 4 MiB again, and 16 MiB new
        }
        assertThat(arena.settle()).as("16 MiB more pooled").isTrue();
        assertThat(collections()).as("collections run").isGreaterThan(before);
        try (var s = arena.open()) {
            for (int i = 0; i < 5; i++) StepArena.floats(1 << 20); // all from the pool: a steady step
        }
        assertThat(arena.settle()).as("a step that pooled nothing new").isFalse();
    }

    private static long collections() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) n += Math.max(0, gc.getCollectionCount());
        return n;
    }
}
