package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a test class's {@code main} in a child JVM with one {@code -D} setting: the kernels choose their paths once
 * per JVM, so a test of another path needs a JVM of its own. Its output goes through a file (a pipe left unread can
 * block the child), and a child still running at the deadline fails the test instead of hanging it.
 */
final class ChildJvm {
    private ChildJvm() {}

    /** The child's output; fails unless it ends within {@code seconds} with exit code 0. */
    static String run(Class<?> main, String setting, int seconds) throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", setting,
                "-cp", System.getProperty("java.class.path"), main.getName());
        Path log = Files.createTempFile("child-jvm", ".log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        String out;
        try {
            boolean ended = p.waitFor(seconds, TimeUnit.SECONDS);
            out = Files.readString(log, StandardCharsets.UTF_8);
            assertThat(ended).as("the child JVM (%s) did not end within %d s:%n%s", setting, seconds, out).isTrue();
        } finally {
            p.destroyForcibly();
            Files.deleteIfExists(log);
        }
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }
}
