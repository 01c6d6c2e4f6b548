package dev.jtrain.checkpoint;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

class LiveSwapsTest {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static MemorySegment staged(Arena arena, int n, float base) {
        MemorySegment s = arena.allocate(4L * n);
        for (int i = 0; i < n; i++) s.setAtIndex(F32_LE, i, base + i);
        return s;
    }

    @Test
    void aSwapPutsTheLoadedValuesLiveAndKeepsTheOldOnesInStagingUntilUndone() {
        int n = 40_000; // more than one pass of the 16 Ki-float temporary
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stage = staged(arena, n, 1_000_000f);
            float[] live = new float[n + 10];
            for (int i = 0; i < live.length; i++) live[i] = -i;
            float[] before = live.clone();
            LiveSwaps swaps = new LiveSwaps();
            swaps.swap(stage, 4L * 3, live, 5, n - 3);
            assertThat(live[4]).isEqualTo(-4f);
            assertThat(live[5]).isEqualTo(1_000_003f);
            assertThat(live[5 + n - 4]).isEqualTo(1_000_000f + n - 1);
            assertThat(live[5 + n - 3]).isEqualTo(-(5f + n - 3));
            assertThat(stage.getAtIndex(F32_LE, 3)).isEqualTo(-5f);
            swaps.undo();
            assertThat(live).isEqualTo(before);
            assertThat(stage.getAtIndex(F32_LE, 3)).isEqualTo(1_000_003f);
            assertThat(swaps.size()).isZero();
        }
    }

    /** Tied weights: two staged ranges swapped into overlapping live ranges still undo to the exact original. */
    @Test
    void undoRestoresExactlyEvenWhenLiveRangesOverlap() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = staged(arena, 100, 500f), b = staged(arena, 100, 900f);
            float[] live = new float[160];
            for (int i = 0; i < live.length; i++) live[i] = Float.intBitsToFloat(0x7fc00000 | i); // NaN payloads: bit-exact
            float[] before = live.clone();
            LiveSwaps swaps = new LiveSwaps();
            swaps.swap(a, 0, live, 0, 100);
            swaps.swap(b, 0, live, 50, 100);
            assertThat(live[10]).isEqualTo(510f);
            assertThat(live[60]).isEqualTo(910f);  // the later swap wins where they overlap
            swaps.undo();
            int[] got = new int[live.length], want = new int[live.length];
            for (int i = 0; i < live.length; i++) {
                got[i] = Float.floatToRawIntBits(live[i]);
                want[i] = Float.floatToRawIntBits(before[i]);
            }
            assertThat(Arrays.equals(got, want)).isTrue();
        }
    }

    @Test
    void aSwapOutOfRangeMovesNothingAndIsNotLogged() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stage = staged(arena, 20_000, 1f);
            float[] live = new float[20_000];
            LiveSwaps swaps = new LiveSwaps();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> swaps.swap(stage, 0, live, 10, 20_000))
                    .isInstanceOf(IndexOutOfBoundsException.class);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> swaps.swap(stage, 8, live, 0, 20_000))
                    .isInstanceOf(IndexOutOfBoundsException.class);
            assertThat(swaps.size()).isZero();
            assertThat(live).containsOnly(0f);
            assertThat(stage.getAtIndex(F32_LE, 19_999)).isEqualTo(20_000f);
        }
    }
}
