package dev.jtrain.comm.algo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.topology.HostTopology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * {@link HierarchicalAllGather} and {@link HierarchicalReduceScatter} on emulated layouts (ranks as threads, hosts
 * declared by a {@link HostTopology}, hosts interleaved or not): every rank's exact result against the definition,
 * and the bytes each host sends to other hosts, {@code (H-1)/H · n}, against the {@code (p-1)/H · n} of a flat ring
 * whose neighbours are all on other hosts.
 */
class HierarchicalGatherScatterTest {
    static final int BLOCK = 3_001; // elements per rank: uneven against the chunking
    static final int[][] LAYOUTS = HierarchicalAllReduceTest.LAYOUTS;

    @Test
    @Timeout(60)
    void allGatherIsExactOnEveryLayout() throws Exception {
        for (int[] layout : LAYOUTS) run(layout, BLOCK, HierarchicalAllGather.INSTANCE, null);
    }

    @Test
    @Timeout(60)
    void reduceScatterSumsExactlyOnEveryLayout() throws Exception {
        for (int[] layout : LAYOUTS) run(layout, BLOCK, null, HierarchicalReduceScatter.INSTANCE);
    }

    @Test
    @Timeout(60)
    void eachHostLinkCarriesTheBoundNotTheFlatRingVolume() throws Exception {
        for (int[] layout : new int[][] {{0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 1, 0, 1}, {0, 0, 1, 1, 2, 2}}) {
            int hosts = Arrays.stream(layout).max().orElseThrow() + 1, p = layout.length;
            long n = 4L * BLOCK * p; // bytes of the whole gathered (or scattered) buffer
            long[] gather = run(layout, BLOCK, HierarchicalAllGather.INSTANCE, null);
            long[] scatter = run(layout, BLOCK, null, HierarchicalReduceScatter.INSTANCE);
            long[] ring = run(layout, BLOCK, RingAllGather.INSTANCE, null);
            for (int h = 0; h < hosts; h++) {
                assertThat(gather[h]).as("all-gather, host %d of %s", h, Arrays.toString(layout)).isEqualTo((hosts - 1) * n / hosts);
                assertThat(scatter[h]).as("reduce-scatter, host %d of %s", h, Arrays.toString(layout)).isEqualTo((hosts - 1) * n / hosts);
                if (Arrays.equals(layout, new int[] {0, 1, 0, 1}))
                    assertThat(ring[h]).as("flat ring over interleaved hosts: every rank's every step crosses").isEqualTo((p - 1) * n / hosts);
            }
        }
    }

    @Test
    @Timeout(60)
    void theCostModelChoosesTheHierarchicalFormsAcrossHostsOnly() {
        // shared memory within a host (1 us, 10 GB/s), a 2 Gbit/s link between hosts (30 us, 0.25 GB/s)
        CostModel intra = new CostModel(1e-6, 1 / 10e9, 1 / 50e9, 4 << 20), inter = new CostModel(30e-6, 1 / 0.25e9, 1 / 50e9, 4 << 20);
        HostTopology two = HostTopology.of(new String[] {"a", "a", "b", "b"}, new String[] {"a", "a", "b", "b"});
        HostTopology one = HostTopology.of(new String[] {"a", "a", "a", "a"}, new String[] {"a", "a", "a", "a"});
        Fabric across = new Fabric(two, intra, inter), within = new Fabric(one, intra, intra);
        for (long n : new long[] {4096, 64L << 20}) {
            assertThat(HierarchicalAllGather.INSTANCE.predictSeconds(across, 4, n)).as("all-gather %d B", n)
                    .isLessThan(RingAllGather.INSTANCE.predictSeconds(across, 4, n));
            assertThat(HierarchicalReduceScatter.INSTANCE.predictSeconds(across, 4, n)).as("reduce-scatter %d B", n)
                    .isLessThan(RingReduceScatter.INSTANCE.predictSeconds(across, 4, n));
            assertThat(HierarchicalAllGather.INSTANCE.predictSeconds(within, 4, n)).isInfinite();
            assertThat(HierarchicalReduceScatter.INSTANCE.predictSeconds(within, 4, n)).isInfinite();
        }
    }

    /**
     * Runs one algorithm (the other null) in int32 SUM on {@code layout}: rank r contributes {@code value(r, i)};
     * checks every rank's result, returns bytes sent off-host per host.
     */
    static long[] run(int[] layout, int block, AllGatherAlgorithm gather, ReduceScatterAlgorithm scatter) throws Exception {
        int p = layout.length;
        return EmulatedHosts.run(layout, DType.INT32, true, (rank, c, arena) -> {
            if (gather != null) {
                MemorySegment in = arena.allocate(4L * block, 64), out = arena.allocate(4L * block * p, 64);
                for (int i = 0; i < block; i++) in.setAtIndex(ValueLayout.JAVA_INT, i, value(rank, i));
                gather.allGather(c, in, out);
                for (int s = 0; s < p; s++)
                    for (int i = 0; i < block; i++)
                        check(out.getAtIndex(ValueLayout.JAVA_INT, (long) s * block + i), value(s, i), rank, "block " + s, i, layout);
                return;
            }
            MemorySegment in = arena.allocate(4L * block * p, 64), out = arena.allocate(4L * block, 64);
            for (int i = 0; i < block * p; i++) in.setAtIndex(ValueLayout.JAVA_INT, i, value(rank, i));
            MemorySegment before = arena.allocate(in.byteSize(), 64).copyFrom(in);
            scatter.reduceScatter(c, in, out, block);
            for (int i = 0; i < block; i++) {
                int expected = 0;
                for (int s = 0; s < p; s++) expected += value(s, rank * block + i);
                check(out.getAtIndex(ValueLayout.JAVA_INT, i), expected, rank, "own block", i, layout);
            }
            if (in.mismatch(before) >= 0) throw new AssertionError("rank " + rank + ": the input was modified");
        });
    }

    private static void check(int got, int expected, int rank, String where, int i, int[] layout) {
        if (got != expected)
            throw new AssertionError("layout " + Arrays.toString(layout) + " rank " + rank + " " + where + " element " + i
                    + ": expected " + expected + " but was " + got);
    }

    static int value(int rank, int i) { return (rank + 1) * 1_000 + i % 977; }
}
