package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.topology.HostTopology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLongArray;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hierarchical all-reduce on emulated layouts (ranks as threads, hosts declared by a {@link HostTopology}):
 * exact sums on every rank, and the property it exists for, measured by counting the bytes each host sends to
 * other hosts: {@code 2(H-1)/H · n} per host, where a flat ring sends {@code 2(p-1)/p · n}.
 */
class HierarchicalAllReduceTest {
    static final int COUNT = 10_007; // not divisible by any block count, so uneven blocks are exercised
    /** MAX_SEGMENTS MiB of int32, uneven: cut into the most segments, so the intra-host rings and the rails run pipelined. */
    static final int PIPELINED_COUNT = HierarchicalAllReduce.MAX_SEGMENTS * (1 << 18) + 7;
    static final int[][] LAYOUTS = {
        {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 2, 2}, {0, 1, 0, 1}, {0, 1, 2, 0, 1, 2}, {0, 0, 1, 1, 2, 2, 3, 3}};

    @Test
    @Timeout(60)
    void sumsExactlyOnEveryLayoutWithEqualRanksPerHost() throws Exception {
        for (int[] layout : LAYOUTS) run(HierarchicalAllReduce.INSTANCE, layout, COUNT); // run() checks every rank's sums
    }

    @Test
    @Timeout(120)
    void pipelinedSegmentsSumExactlyOnEveryLayout() throws Exception {
        assertThat(HierarchicalAllReduce.segments(4L * PIPELINED_COUNT)).isEqualTo(HierarchicalAllReduce.MAX_SEGMENTS);
        for (int[] layout : LAYOUTS) run(HierarchicalAllReduce.INSTANCE, layout, PIPELINED_COUNT, true);
    }

    @Test
    @Timeout(60)
    void aBufferOnlyTheCallerMayTouchRunsUnpipelined() throws Exception {
        run(HierarchicalAllReduce.INSTANCE, new int[] {0, 0, 1, 1}, PIPELINED_COUNT, false); // a second thread would throw
    }

    @Test
    @Timeout(60)
    void eachHostLinkCarriesTheBoundNotTheFlatRingVolume() throws Exception {
        // 1.5 MiB of int32 per segment, the most segments, each divisible by every block count here: exact byte counts
        int count = HierarchicalAllReduce.MAX_SEGMENTS * 6 * (1 << 16);
        long n = 4L * count;
        for (int[] layout : new int[][] {{0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 2, 2}}) {
            int hosts = Arrays.stream(layout).max().orElseThrow() + 1, p = layout.length;
            long[] hier = run(HierarchicalAllReduce.INSTANCE, layout, count);
            long[] ring = run(RingAllReduce.INSTANCE, layout, count);
            for (int h = 0; h < hosts; h++) {
                assertThat(hier[h]).as("hierarchical, host %d of %s", h, Arrays.toString(layout)).isEqualTo(2L * (hosts - 1) * n / hosts);
                assertThat(ring[h]).as("flat ring, host %d of %s", h, Arrays.toString(layout)).isEqualTo(2L * (p - 1) * n / p);
            }
        }
    }

    @Test
    @Timeout(60)
    void unevenHostsFallBackToTheRing() throws Exception {
        int[] layout = {0, 0, 1};
        assertThat(run(HierarchicalAllReduce.INSTANCE, layout, COUNT)).containsExactly(run(RingAllReduce.INSTANCE, layout, COUNT));
    }

    /** Runs {@code algo} as int32 SUM on {@code layout}, checks every rank's result, returns bytes sent off-host per host. */
    static long[] run(AllReduceAlgorithm algo, int[] layout, int count) throws Exception {
        return run(algo, layout, count, true);
    }

    /** @param shared buffers any thread may touch (else confined to the rank's thread) */
    static long[] run(AllReduceAlgorithm algo, int[] layout, int count, boolean shared) throws Exception {
        int p = layout.length;
        return EmulatedHosts.run(layout, DType.INT32, shared, (rank, c, arena) -> {
            MemorySegment buf = arena.allocate(4L * count, 64);
            for (int i = 0; i < count; i++) buf.setAtIndex(ValueLayout.JAVA_INT, i, value(rank, i));
            algo.allReduce(c, buf, count);
            for (int i = 0; i < count; i++) {
                int expected = 0;
                for (int s = 0; s < p; s++) expected += value(s, i);
                int got = buf.getAtIndex(ValueLayout.JAVA_INT, i);
                if (got != expected) {
                    throw new AssertionError(algo.name() + " layout " + Arrays.toString(layout) + " rank " + rank
                            + " element " + i + ": expected " + expected + " but was " + got);
                }
            }
        });
    }

    static int value(int rank, int i) { return (rank + 1) * 1_000 + i % 977; }
}
