package dev.jtrain.cli.hosts;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The command line of the built {@code jtrain} jar in a fresh JVM (what the {@code jtrain} script runs). */
public final class JtrainJar {
    private JtrainJar() {}

    public static List<String> command(String... args) {
        Path jar = Path.of(System.getProperty("jtrain.jar", "target/jtrain-cli.jar")).toAbsolutePath();
        if (!Files.isRegularFile(jar)) throw new IllegalStateException("jtrain jar not built: " + jar + " (integration tests run after package)");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:+UseParallelGC",
                "-XX:TieredStopAtLevel=1", "-Xmx512m", "-jar", jar.toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
