package dev.jtrain.cli;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line that starts {@code mainClass} in a new JVM like this one: same java executable, same JVM flags
 * (the Vector API module, native access, GC and heap settings), same class path. Commands that launch ranks use it.
 */
final class ChildJvm {
    /**
     * What a rank's JVM holds beside its heap: code, GC structures, thread stacks, the shared-memory rings it has
     * touched and the native buffers of collectives. GPT-2-large under ZeRO-3, 4 ranks: 0.57-0.60 GiB
     * (bench/MEASUREMENTS.md, "Memory beside the heap").
     */
    private static final long NON_HEAP_BYTES = 5L << 27;

    /** Of what the host has available, the part rank JVMs may take; the rest stays for the page cache and the launcher. */
    private static final double HOST_SHARE = 0.95;

    /**
     * Old generation : young generation when the heap is sized here. A rank's weights, gradients and optimizer state
     * live for the whole run, and ParallelGC's old generation is only two thirds of the heap by default (NewRatio=2):
     * ZeRO-3 state that fits the heap would not fit there. The young generation holds a step's short-lived garbage,
     * which the step arena keeps small.
     */
    static final int NEW_RATIO = 7;

    private ChildJvm() {}

    static List<String> command(String mainClass, List<String> args) {
        return command(mainClass, args, 1);
    }

    /**
     * The heap flags for one of {@code ranksOnHost} rank JVMs started together on this host. A JVM's heap grows
     * towards its maximum, a quarter of the machine by default, whatever the live data, so four or more of them
     * together outgrow the machine and the kernel's OOM killer ends one (SIGKILL, no Java error). Unless the parent's
     * {@code flags} set the heap, each rank gets an equal share of 95% of what the host has {@code available}, less
     * {@link #NON_HEAP_BYTES}, at least 256 MiB and at most the parent's own maximum. Under a collector with a fixed
     * split (Parallel, Serial), the old generation gets {@link #NEW_RATIO}/({@link #NEW_RATIO} + 1) of the heap, whoever
     * sized it, unless the flags size the generations. None for a rank alone.
     */
    static List<String> heapOptions(List<String> flags, long available, int ranksOnHost, long parentMaxHeap) {
        if (ranksOnHost <= 1) return List.of();
        List<String> out = new ArrayList<>();
        boolean heapSet = flags.stream().anyMatch(f -> f.startsWith("-Xmx") || f.startsWith("-XX:MaxHeapSize")
                || f.startsWith("-XX:MaxRAM"));
        if (!heapSet && available > 0) {
            long share = (long) (available * HOST_SHARE) / ranksOnHost - NON_HEAP_BYTES;
            out.add("-Xmx" + (Math.min(parentMaxHeap, Math.max(256L << 20, share)) >> 20) + "m");
        }
        boolean fixedSplit = flags.contains("-XX:+UseParallelGC") || flags.contains("-XX:+UseSerialGC");
        boolean generationsSet = flags.stream().anyMatch(f -> f.startsWith("-Xmn") || f.startsWith("-XX:NewRatio")
                || f.startsWith("-XX:NewSize") || f.startsWith("-XX:MaxNewSize"));
        if (fixedSplit && !generationsSet) out.add("-XX:NewRatio=" + NEW_RATIO);
        return out;
    }

    static List<String> command(String mainClass, List<String> args, int ranksOnHost) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        List<String> flags = ManagementFactory.getRuntimeMXBean().getInputArguments();
        cmd.addAll(flags);
        cmd.addAll(heapOptions(flags, HostMemory.availableBytes(), ranksOnHost, Runtime.getRuntime().maxMemory()));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        return cmd;
    }
}
