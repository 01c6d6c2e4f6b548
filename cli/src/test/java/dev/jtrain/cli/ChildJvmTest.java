package dev.jtrain.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import java.util.List;

/** Rank JVMs started together on one host share its memory instead of each taking a quarter of the machine. */
class ChildJvmTest {
    static final long GIB = 1L << 30;

    @Test
    void ranksOnOneHostSplitWhatItHasAvailable() {
        // 4 ranks, 22 GiB available: 0.9 x 22 / 4 = 4.95 GiB, less 1 GiB beside the heap
        assertThat(ChildJvm.heapOption(List.of("-XX:+UseParallelGC"), 22 * GIB, 4, 6 * GIB)).contains("-Xmx" + (long) ((22 * GIB * 0.9 / 4 - GIB) / (1 << 20)) + "m");
        assertThat(ChildJvm.heapOption(List.of(), 22 * GIB, 2, 4 * GIB)).as("never more than the parent's own").contains("-Xmx4096m");
    }

    @Test
    void anExplicitHeapOrASingleRankIsLeftAlone() {
        assertThat(ChildJvm.heapOption(List.of("-Xmx2g"), 22 * GIB, 4, 6 * GIB)).isEmpty();
        assertThat(ChildJvm.heapOption(List.of("-XX:MaxRAMPercentage=10"), 22 * GIB, 4, 6 * GIB)).isEmpty();
        assertThat(ChildJvm.heapOption(List.of(), 22 * GIB, 1, 6 * GIB)).isEmpty();
        assertThat(ChildJvm.heapOption(List.of(), -1, 4, 6 * GIB)).as("no /proc/meminfo").isEmpty();
    }
}
