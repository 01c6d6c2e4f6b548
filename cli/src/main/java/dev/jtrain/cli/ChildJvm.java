package dev.jtrain.cli;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The command line that starts {@code mainClass} in a new JVM like this one: same java executable, same JVM flags
 * (the Vector API module, native access, GC and heap settings), same class path. Commands that launch ranks use it.
 */
final class ChildJvm {
    /**
     * What a rank's JVM holds beside its heap: code, GC structures, thread stacks, the shared-memory rings it has
     * touched and the off-heap buffers of collectives (bench/MEASUREMENTS.md, "Memory beside the heap").
     */
    private static final long NON_HEAP_BYTES = 1L << 30;

    private ChildJvm() {}

    static List<String> command(String mainClass, List<String> args) {
        return command(mainClass, args, 1);
    }

    /**
     * As {@link #command(String, List)} for one of {@code ranksOnHost} JVMs started together on this host. A JVM's
     * heap grows towards its maximum, a quarter of the machine by default, whatever the live data, so four or more
     * of them together outgrow the machine and the kernel's OOM killer ends one (SIGKILL, no Java error). Unless the
     * heap was set explicitly, each gets an equal share of what the host has available, less room for what a JVM
     * holds beside its heap (and never more than the default).
     */
    /**
     * The heap flag for one of {@code ranksOnHost} rank JVMs: none when the parent's {@code flags} set the heap or the
     * rank is alone, else 90% of the host's {@code available} bytes over the ranks, less {@link #NON_HEAP_BYTES}, at
     * least 256 MiB and at most the parent's own maximum.
     */
    static Optional<String> heapOption(List<String> flags, long available, int ranksOnHost, long parentMaxHeap) {
        boolean heapSet = flags.stream().anyMatch(f -> f.startsWith("-Xmx") || f.startsWith("-XX:MaxHeapSize")
                || f.startsWith("-XX:MaxRAM"));
        if (heapSet || ranksOnHost <= 1 || available <= 0) return Optional.empty();
        long share = (long) (available * 0.9) / ranksOnHost - NON_HEAP_BYTES;
        long heap = Math.min(parentMaxHeap, Math.max(256L << 20, share));
        return Optional.of("-Xmx" + (heap >> 20) + "m");
    }

    static List<String> command(String mainClass, List<String> args, int ranksOnHost) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        List<String> flags = ManagementFactory.getRuntimeMXBean().getInputArguments();
        cmd.addAll(flags);
        heapOption(flags, HostMemory.availableBytes(), ranksOnHost, Runtime.getRuntime().maxMemory()).ifPresent(cmd::add);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        return cmd;
    }
}
