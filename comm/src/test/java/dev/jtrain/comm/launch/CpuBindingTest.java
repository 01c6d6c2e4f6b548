package dev.jtrain.comm.launch;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.BitSet;
import java.util.Optional;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CpuBindingTest {
    private static BitSet cpus(String list) { return CpuBinding.parseList(list); }

    /** A host whose every CPU is a core of its own, in id order. */
    private static final IntFunction<int[]> NUMBERED = cpu -> new int[]{0, 0, cpu};

    @Test
    void linuxCpuListsParseAndFormatBack() {
        assertThat(CpuBinding.format(cpus("0-3,8,10-11"))).isEqualTo("0-3,8,10-11");
        assertThat(cpus("0").cardinality()).isEqualTo(1);
        assertThat(cpus("2-5").stream().toArray()).containsExactly(2, 3, 4, 5);
    }

    /** Local ranks get disjoint, contiguous slices that together cover every allowed CPU; remainders go first. */
    @Test
    void slicesAreDisjointContiguousAndCoverTheHost() {
        BitSet host = cpus("0-6");
        BitSet union = new BitSet();
        int[] sizes = new int[3];
        for (int r = 0; r < 3; r++) {
            BitSet s = CpuBinding.sliceFor(host, host, r, 3, NUMBERED).orElseThrow();
            assertThat(s.intersects(union)).as("rank %d overlaps an earlier slice", r).isFalse();
            assertThat(s.nextClearBit(s.nextSetBit(0)) - s.nextSetBit(0)).as("contiguous").isEqualTo(s.cardinality());
            union.or(s);
            sizes[r] = s.cardinality();
        }
        assertThat(union).isEqualTo(host);
        assertThat(sizes).containsExactly(3, 2, 2);
        assertThat(CpuBinding.sliceFor(cpus("0-1"), cpus("0-1"), 1, 2, NUMBERED)).contains(cpus("1"));
        assertThat(CpuBinding.sliceFor(cpus("0,2,4,6"), cpus("0,2,4,6"), 1, 2, NUMBERED)).contains(cpus("4,6"));
    }

    /**
     * 4 cores x 2 hardware threads numbered as Linux does (core c is CPUs c and c + 4): ranks get whole cores, never
     * one thread of a core each; with more ranks than cores, a core's two threads go to neighbouring ranks; a slice
     * starts on the first NUMA node.
     */
    @Test
    void slicesFollowCoresAndNodesNotCpuNumbers() {
        BitSet host = cpus("0-7");
        IntFunction<int[]> smt = cpu -> new int[]{0, 0, cpu % 4};
        assertThat(CpuBinding.sliceFor(host, host, 0, 2, smt)).contains(cpus("0-1,4-5"));
        assertThat(CpuBinding.sliceFor(host, host, 1, 2, smt)).contains(cpus("2-3,6-7"));
        assertThat(CpuBinding.sliceFor(host, host, 0, 3, smt)).contains(cpus("0-1,4-5"));
        assertThat(CpuBinding.sliceFor(host, host, 2, 3, smt)).contains(cpus("3,7"));
        assertThat(CpuBinding.sliceFor(host, host, 1, 6, smt)).as("more ranks than cores").contains(cpus("1,5"));
        assertThat(CpuBinding.sliceFor(host, host, 2, 6, smt)).contains(cpus("2"));
        assertThat(CpuBinding.sliceFor(host, host, 3, 6, smt)).contains(cpus("6"));
        IntFunction<int[]> twoNodes = cpu -> new int[]{cpu < 4 ? 1 : 0, cpu < 4 ? 1 : 0, cpu % 4};
        assertThat(CpuBinding.sliceFor(host, host, 0, 2, twoNodes)).as("node 0 first").contains(cpus("4-7"));
    }

    @Test
    void noBindingWhenItCannotHelpOrSomeoneElseBound() {
        BitSet host = cpus("0-3");
        assertThat(CpuBinding.sliceFor(host, host, 0, 1, NUMBERED)).as("a single rank").isEmpty();
        assertThat(CpuBinding.sliceFor(cpus("0-1"), cpus("0-1"), 0, 4, NUMBERED)).as("more ranks than CPUs").isEmpty();
        assertThat(CpuBinding.sliceFor(cpus("2-3"), host, 0, 2, NUMBERED)).as("already bound by srun/mpirun").isEmpty();
    }

    @Test
    void theSettingIsAutoUnlessTurnedOff() {
        assertThatThrownBy(() -> CpuBinding.bindLocalRank("cores", 0, 2)).hasMessageContaining("JTRAIN_CPU_BIND=cores");
        assertThat(CpuBinding.bindLocalRank("none", 0, 2)).isEmpty();
        assertThat(CpuBinding.enabled("none")).isFalse();
        assertThat(CpuBinding.enabled(" AUTO ")).isTrue();
        assertThat(CpuBinding.enabled(null)).as("on unless turned off").isTrue();
        assertThat(CpuBinding.enabled("")).as("on unless turned off").isTrue();
    }

    /** In a child JVM (binding changes the whole process): local rank 1 of 2 ends up on the second half of the CPUs. */
    @Test
    void aRankBindsEveryThreadOfItsProcess() throws Exception {
        Optional<BitSet> allowed = CpuBinding.allowed(), online = CpuBinding.online();
        Assumptions.assumeTrue(CpuBinding.supported() && allowed.isPresent() && online.isPresent()
                && allowed.get().equals(online.get()) && allowed.get().cardinality() >= 2,
                "needs Linux, at least 2 CPUs and a process not already bound (taskset/srun)");
        ProcessBuilder pb = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), BindChild.class.getName())
                .redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        assertThat(p.waitFor()).as(out).isZero();
        BitSet want = CpuBinding.sliceFor(allowed.get(), online.get(), 1, 2, CpuBinding::sysfsPlace).orElseThrow();
        assertThat(out).isEqualTo("bound " + CpuBinding.format(want) + " threads-all-bound " + want.cardinality());
    }

    /** Binds as local rank 1 of 2 with the setting unset, starts a thread afterwards, and reports every thread's allowed list. */
    public static final class BindChild {
        public static void main(String[] args) throws Exception {
            BitSet bound = CpuBinding.bindLocalRank(null, 1, 2).orElseThrow(); // unset: the default binds
            Thread late = Thread.ofPlatform().start(() -> { });
            late.join();
            boolean all;
            try (var tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
                all = tasks.allMatch(t -> {
                    try {
                        return java.nio.file.Files.readAllLines(t.resolve("status")).stream()
                                .filter(l -> l.startsWith("Cpus_allowed_list:")).allMatch(l -> l.split(":")[1].trim().equals(CpuBinding.format(bound)));
                    } catch (java.io.IOException gone) {
                        return true; // a thread that ended meanwhile
                    }
                });
            }
            System.out.println("bound " + CpuBinding.format(bound) + (all ? " threads-all-bound " : " SOME-THREADS-UNBOUND ") + Runtime.getRuntime().availableProcessors());
        }
    }
}
