package dev.jtrain.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import java.util.List;

/** Rank JVMs started together on one host share its memory instead of each taking a quarter of the machine. */
class ChildJvmTest {
    static final long GIB = 1L << 30;

    @Test
    void ranksOnOneHostSplitWhatItHasAvailable() {
        // 4 ranks, 22 GiB available: 0.95 x 22 / 4 = 5.23 GiB, less 0.625 GiB beside the heap; a large old generation
        assertThat(ChildJvm.heapOptions(List.of("-XX:+UseParallelGC"), 22 * GIB, 4, 6 * GIB))
                .containsExactly("-Xmx" + (long) ((22 * GIB * 0.95 / 4 - 0.625 * GIB) / (1 << 20)) + "m", "-XX:NewRatio=7");
        assertThat(ChildJvm.heapOptions(List.of(), 22 * GIB, 2, 4 * GIB)).as("never more than the parent's own; G1: no split to set")
                .containsExactly("-Xmx4096m");
        assertThat(ChildJvm.heapOptions(List.of("-XX:+UseParallelGC", "-Xmn512m"), 22 * GIB, 2, 4 * GIB)).as("generations sized by the user")
                .containsExactly("-Xmx4096m");
    }

    @Test
    void anExplicitHeapOrASingleRankIsLeftAlone() {
        assertThat(ChildJvm.heapOptions(List.of("-Xmx2g"), 22 * GIB, 4, 6 * GIB)).isEmpty();
        assertThat(ChildJvm.heapOptions(List.of("-XX:+UseParallelGC", "-Xmx2g"), 22 * GIB, 4, 6 * GIB))
                .as("the user's heap, with an old generation that holds the state").containsExactly("-XX:NewRatio=7");
        assertThat(ChildJvm.heapOptions(List.of("-XX:MaxRAMPercentage=10"), 22 * GIB, 4, 6 * GIB)).isEmpty();
        assertThat(ChildJvm.heapOptions(List.of(), 22 * GIB, 1, 6 * GIB)).isEmpty();
        assertThat(ChildJvm.heapOptions(List.of(), -1, 4, 6 * GIB)).as("no /proc/meminfo").isEmpty();
    }
}
