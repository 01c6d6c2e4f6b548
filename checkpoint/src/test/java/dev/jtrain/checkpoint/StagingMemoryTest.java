package dev.jtrain.checkpoint;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StagingMemoryTest {
    @Test
    void largeBuffersAreZeroedHugePageAlignedAndFreedWithTheirArena() {
        Arena arena = Arena.ofShared();
        long bytes = (5L << 20) + 4096;
        MemorySegment s = StagingMemory.allocate(arena, bytes, 4096, true);
        assertThat(s.byteSize()).isEqualTo(bytes);
        if (System.getProperty("os.name").toLowerCase().contains("linux"))
            assertThat(s.address() % (2L << 20)).as("mmap path: 2 MiB aligned").isZero();
        for (long i = 0; i < bytes; i += 4096) assertThat(s.get(ValueLayout.JAVA_BYTE, i)).isZero();
        s.set(ValueLayout.JAVA_LONG, bytes - 8, 42L);
        assertThat(s.get(ValueLayout.JAVA_LONG, bytes - 8)).isEqualTo(42L);
        arena.close(); // unmaps
        assertThatThrownBy(() -> s.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void hugePagesCanBeTurnedOffAndTheArenaAllocatesAsUsual() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = StagingMemory.allocate(arena, 4L << 20, 4096, false);
            assertThat(s.byteSize()).isEqualTo(4L << 20);
            assertThat(s.address() % 4096).isZero();
            s.set(ValueLayout.JAVA_INT, (4L << 20) - 4, 7);
            assertThat(s.get(ValueLayout.JAVA_INT, (4L << 20) - 4)).isEqualTo(7);
        }
    }

    @Test
    void smallBuffersComeFromTheArenaWithTheAskedAlignment() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = StagingMemory.allocate(arena, 1 << 20, 4096, true);
            assertThat(s.address() % 4096).isZero();
            assertThat(s.byteSize()).isEqualTo(1 << 20);
        }
    }
}
