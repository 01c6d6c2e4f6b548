package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The machine-code blobs shipped as resources are what their assembly sources in {@code src/main/asm} assemble to,
 * so a source edited without rerunning {@code assemble.sh} (or a blob edited by hand) fails here. Needs GNU as and
 * objcopy (Debian: binutils); without them it says so and is skipped.
 */
class MachineCodeSourceTest {
    @TempDir
    Path tmp;

    private static boolean has(String tool) {
        try {
            return new ProcessBuilder(tool, "--version").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start().waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static void run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", cmd) + ": " + out).isZero();
    }

    @Test
    void everyShippedBlobIsItsAssembledSource() throws Exception {
        Assumptions.assumeTrue(has("as") && has("objcopy"), "GNU as and objcopy (Debian package binutils) are not on "
                + "the PATH, so the shipped bf16 kernel cannot be checked against its source here");
        Path dir = Path.of("src/main/asm");
        assertThat(dir).as("run from the core module directory").isDirectory();
        List<Path> sources;
        try (var files = Files.list(dir)) {
            sources = files.filter(f -> f.toString().endsWith(".S")).sorted().toList();
        }
        assertThat(sources).extracting(f -> f.getFileName().toString()).contains("bf16_kernel_x86_64.S");
        for (Path src : sources) {
            String name = src.getFileName().toString().replace(".S", "");
            run("as", "--64", "-o", tmp.resolve(name + ".o").toString(), src.toString());
            run("objcopy", "-O", "binary", "-j", ".text", tmp.resolve(name + ".o").toString(), tmp.resolve(name + ".bin").toString());
            byte[] shipped;
            try (InputStream in = MachineCode.class.getResourceAsStream(name + ".bin")) {
                assertThat(in).as(name + ".bin is on the class path").isNotNull();
                shipped = in.readAllBytes();
            }
            assertThat(shipped).as(name + ".bin shipped vs assembled from " + src + ": rerun core/src/main/asm/assemble.sh")
                    .isEqualTo(Files.readAllBytes(tmp.resolve(name + ".bin")));
        }
    }
}
