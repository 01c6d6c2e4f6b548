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
    private ChildJvm() {}

    static List<String> command(String mainClass, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        return cmd;
    }
}
