package dev.jtrain.cli;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code -Djtrain.*} kernel setting is validated when the class holding it loads ({@code KernelOptions}); a value
 * refused there is the user's mistake, so {@code jtrain} says which setting and why in one line and exits 2, as for any
 * bad input, instead of a JVM trace of an ExceptionInInitializerError. Runs in a child JVM: this one has loaded the
 * settings already.
 */
class BadSettingTest {
    @Test
    void aRefusedKernelSettingIsOneLineAndExitCode2() throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                "-Djtrain.sgemm.mr=7", "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "bench", "matmul", "--m", "16", "--n", "16", "--k", "16");
        Path log = Files.createTempFile("bad-setting", ".log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        String out;
        try {
            boolean ended = p.waitFor(60, TimeUnit.SECONDS);
            out = Files.readString(log, StandardCharsets.UTF_8);
            assertThat(ended).as("jtrain did not end within 60 s:%n%s", out).isTrue();
        } finally {
            p.destroyForcibly();
            Files.deleteIfExists(log);
        }
        assertThat(p.exitValue()).as(out).isEqualTo(2);
        assertThat(out).contains("jtrain: jtrain.sgemm.mr must be 6 or 12: 7")
                .doesNotContain("ExceptionInInitializerError").doesNotContain("\tat ");
    }
}
