package dev.jtrain.comm.launch;

import java.util.ArrayList;
import java.util.List;

/** Builds the command line that runs {@link WorkerMain} in a fresh JVM with this JVM's class path. */
public final class JvmRanks {
    private JvmRanks() { }

    /** Tuned for start-up time (C1 only): for tests. */
    public static List<String> workerCommand(String... args) { return command(true, args); }

    /** Full JIT, for measurements. */
    public static List<String> benchCommand(String... args) { return command(false, args); }

    private static List<String> command(boolean fastStart, String... args) {
        String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx1g", "--enable-native-access=ALL-UNNAMED"));
        if (fastStart) cmd.addAll(List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), WorkerMain.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
