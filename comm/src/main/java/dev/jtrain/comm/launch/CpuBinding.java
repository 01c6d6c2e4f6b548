package dev.jtrain.comm.launch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.IntFunction;
import java.util.stream.Stream;

/**
 * Binds the ranks of one host to disjoint sets of CPUs, as {@code mpirun --bind-to core} does by default for small
 * jobs and DeepSpeed's {@code --bind_cores_to_rank} does on request. On by default; {@code JTRAIN_CPU_BIND=none} leaves
 * placement to the scheduler.
 *
 * <p>Why: a training rank's compute thread that the scheduler moves to another CPU leaves its private L1/L2 behind
 * (the GEMM's packed panels and the activations it is working through), and each JVM's own helper threads (JIT, GC,
 * background communication) land on the CPU another rank is computing on. Ranks that exchange through shared memory
 * also poll for each other's bytes, and two ranks' hot threads on one CPU make a large all-reduce several times
 * slower. With every rank in its own slice, a rank's helpers only take time from that rank. Measured on DDP training
 * (2 ranks x 1 thread on 2 CPUs), binding was faster in 13 of 14 alternating pairs, and level for ZeRO-3; for an
 * all-reduce alone it neither won nor lost (bench/MEASUREMENTS.md, "CPU binding for training" and "the all-reduce alone").
 *
 * <p>Policy ({@link #sliceFor}): only when nobody bound the process already (its allowed set is every online CPU:
 * {@code srun --cpu-bind} or {@code mpirun --bind-to core} have their say) and the host has at least one CPU per
 * local rank; local rank r gets the r-th of equal slices of the CPUs in topology order (NUMA node, package, core),
 * whole cores each when there are enough, the first slices one core (or CPU) larger when the division leaves a
 * remainder. Everything is Linux-only ({@code sched_setaffinity}); elsewhere it does nothing.
 *
 * <p>Threading: {@link #bindProcess} sets the mask of every thread that exists at the call; threads created later
 * inherit their creator's mask, so calling it early (at rendezvous) covers the process.
 */
public final class CpuBinding {
    /** {@code auto} (default) or {@code none}: whether a rank binds itself to its slice of the host's CPUs. */
    public static final String ENV = "JTRAIN_CPU_BIND";

    private static final int MASK_BYTES = 128; // 1024 CPUs, glibc's cpu_set_t
    private static final MethodHandle GET = lookup("sched_getaffinity");
    private static final MethodHandle SET = lookup("sched_setaffinity");

    private CpuBinding() {}

    /** Whether this platform supports binding (Linux with native access). */
    public static boolean supported() { return GET != null && SET != null; }

    /** The CPUs this process may run on, or empty where that can not be asked. */
    public static Optional<BitSet> allowed() {
        if (GET == null) return Optional.empty();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment mask = a.allocate(MASK_BYTES);
            int rc = (int) GET.invokeExact(0, (long) MASK_BYTES, mask);
            return rc == 0 ? Optional.of(BitSet.valueOf(mask.toArray(ValueLayout.JAVA_BYTE))) : Optional.empty();
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    /** Online CPUs of the host, from {@code /sys/devices/system/cpu/online} (e.g. {@code 0-3,6}). */
    static Optional<BitSet> online() {
        try {
            return Optional.of(parseList(Files.readString(Path.of("/sys/devices/system/cpu/online")).trim()));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Parses a Linux CPU list such as {@code 0-3,8,10-11}. */
    static BitSet parseList(String list) {
        BitSet s = new BitSet();
        for (String part : list.split(",")) {
            if (part.isBlank()) continue;
            int dash = part.indexOf('-');
            int lo = Integer.parseInt(part.substring(0, dash < 0 ? part.length() : dash).trim());
            int hi = dash < 0 ? lo : Integer.parseInt(part.substring(dash + 1).trim());
            s.set(lo, hi + 1);
        }
        return s;
    }

    /**
     * The slice of {@code allowed} for {@code localRank} of {@code localWorldSize}, or empty when binding would not
     * help: a single local rank, fewer CPUs than local ranks, or an allowed set smaller than {@code online}
     * (someone else bound this process). {@code place} says where each CPU id sits: {NUMA node, package, core} (SMT
     * siblings share all three). CPUs are taken in that order, so a slice stays within a node where it can, and
     * whole cores are shared out when there are at least as many cores as ranks: Linux numbers a core's second
     * hardware thread far from its first (cpu i and i + cores), and slicing by number would give the second rank the
     * siblings of the first rank's cores, two ranks competing for each core's execution units and L2.
     */
    static Optional<BitSet> sliceFor(BitSet allowed, BitSet online, int localRank, int localWorldSize, IntFunction<int[]> place) {
        int cpus = allowed.cardinality();
        if (localWorldSize < 2 || cpus < localWorldSize || !allowed.equals(online)) return Optional.empty();
        Map<List<Integer>, List<Integer>> byCore = new TreeMap<>(Comparator.comparing((List<Integer> k) -> k.get(0))
                .thenComparing(k -> k.get(1)).thenComparing(k -> k.get(2)));
        allowed.stream().forEach(cpu -> {
            int[] at = place.apply(cpu);
            byCore.computeIfAbsent(List.of(at[0], at[1], at[2]), k -> new ArrayList<>()).add(cpu);
        });
        // the units shared out: whole cores when each rank can have one, else single CPUs in core order
        List<List<Integer>> units = new ArrayList<>(byCore.values());
        if (units.size() < localWorldSize) units = units.stream().flatMap(List::stream).map(List::of).toList();
        int base = units.size() / localWorldSize, extra = units.size() % localWorldSize;
        int from = localRank * base + Math.min(localRank, extra), count = base + (localRank < extra ? 1 : 0);
        BitSet slice = new BitSet();
        for (List<Integer> unit : units.subList(from, from + count)) unit.forEach(slice::set);
        return Optional.of(slice);
    }

    /**
     * {NUMA node, package, core} of a CPU from sysfs ({@code /sys/devices/system/cpu/cpuN/topology}, and the
     * {@code nodeK} entry beside it); what can not be read counts as node 0, package 0, a core of its own.
     */
    static int[] sysfsPlace(int cpu) {
        Path dir = Path.of("/sys/devices/system/cpu/cpu" + cpu);
        int node = 0;
        try (Stream<Path> entries = Files.list(dir)) {
            node = entries.map(e -> e.getFileName().toString()).filter(n -> n.matches("node[0-9]+"))
                    .mapToInt(n -> Integer.parseInt(n.substring(4))).findFirst().orElse(0);
        } catch (IOException | RuntimeException e) {
            // no NUMA information: one node
        }
        try {
            int pkg = Integer.parseInt(Files.readString(dir.resolve("topology/physical_package_id")).trim());
            int core = Integer.parseInt(Files.readString(dir.resolve("topology/core_id")).trim());
            return new int[]{node, pkg, core};
        } catch (IOException | RuntimeException e) {
            return new int[]{node, 0, Integer.MIN_VALUE + cpu}; // a core of its own, before the known ones, by id
        }
    }

    /**
     * Whether the {@link #ENV} setting asks for binding: {@code auto} or unset (yes), {@code none} (no); anything else
     * is refused, naming the variable.
     */
    public static boolean enabled(String setting) {
        String s = setting == null || setting.isBlank() ? "auto" : setting.trim().toLowerCase(Locale.ROOT);
        if (!s.equals("auto") && !s.equals("none")) {
            throw new RendezvousConfigException(ENV + " must be auto or none: " + ENV + "=" + setting);
        }
        return s.equals("auto");
    }

    /**
     * The slice local rank {@code localRank} of {@code localWorldSize} would be bound to, without binding: empty when
     * the policy says no ({@link #sliceFor}) or the platform can not tell.
     */
    public static Optional<BitSet> planFor(int localRank, int localWorldSize) {
        if (!supported()) return Optional.empty();
        Optional<BitSet> allowed = allowed(), online = online();
        if (allowed.isEmpty() || online.isEmpty()) return Optional.empty();
        return sliceFor(allowed.get(), online.get(), localRank, localWorldSize, CpuBinding::sysfsPlace);
    }

    /**
     * Binds this process to its slice when the setting ({@link #enabled}) and the policy say so; returns the CPUs
     * bound to, or empty. {@code setting} is the resolved {@link #ENV} value.
     */
    public static Optional<BitSet> bindLocalRank(String setting, int localRank, int localWorldSize) {
        if (!enabled(setting)) return Optional.empty();
        Optional<BitSet> slice = planFor(localRank, localWorldSize);
        slice.ifPresent(CpuBinding::bindProcess);
        return slice;
    }

    /** The CPUs this process is confined to, when that is fewer than the host's online CPUs (bound by us or anyone). */
    public static Optional<BitSet> bound() {
        Optional<BitSet> allowed = allowed(), online = online();
        return allowed.isPresent() && online.isPresent() && !allowed.get().equals(online.get()) ? allowed : Optional.empty();
    }

    /**
     * Kernel threads for one of {@code localWorldSize} ranks on this host: all the CPUs it may use when it is bound
     * (by us or by the engine), else an equal share of the host's.
     */
    public static int threadsPerLocalRank(int localWorldSize) {
        int cores = Runtime.getRuntime().availableProcessors(); // honours the current affinity mask and cgroup quota
        return bound().isPresent() ? cores : Math.max(1, cores / localWorldSize);
    }

    /** Sets the affinity of every current thread of this process to {@code cpus}; best effort per thread. */
    static void bindProcess(BitSet cpus) {
        try (Arena a = Arena.ofConfined(); Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            MemorySegment mask = a.allocate(MASK_BYTES);
            byte[] bits = cpus.toByteArray();
            MemorySegment.copy(bits, 0, mask, ValueLayout.JAVA_BYTE, 0, Math.min(bits.length, MASK_BYTES));
            for (Path t : tasks.toList()) {
                int tid = Integer.parseInt(t.getFileName().toString());
                try {
                    int ignored = (int) SET.invokeExact(tid, (long) MASK_BYTES, mask); // a thread that just ended: ESRCH
                } catch (Throwable e) {
                    // keep going: the remaining threads still benefit
                }
            }
        } catch (IOException e) {
            // no /proc: leave the scheduler in charge
        }
    }

    /** {@code 0-1,4}-style text of a CPU set, for logs. */
    public static String format(BitSet cpus) {
        StringBuilder b = new StringBuilder();
        for (int lo = cpus.nextSetBit(0); lo >= 0; ) {
            int hi = cpus.nextClearBit(lo) - 1;
            if (!b.isEmpty()) b.append(',');
            b.append(lo);
            if (hi > lo) b.append('-').append(hi);
            lo = cpus.nextSetBit(hi + 1);
        }
        return b.toString();
    }

    @SuppressWarnings("restricted") // every jtrain JVM runs with --enable-native-access
    private static MethodHandle lookup(String name) {
        try {
            if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) return null;
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find(name).map(addr -> linker.downcallHandle(addr,
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS))).orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }
}
