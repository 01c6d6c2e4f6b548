package dev.jtrain.comm.launch;

import java.util.ArrayList;
import java.util.List;

/** Builds the command line that runs {@link WorkerMain} in a fresh JVM with this JVM's class path. */
public final class JvmRanks {
    private JvmRanks() { }

    public static List<String> workerCommand(String... args) {
        String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Xshare:auto", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), WorkerMain.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
