package dev.jtrain.gpt;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A training step's bits must not depend on whether HotSpot has compiled the kernels yet: bitwise-exact resume and
 * activation recompute rely on it. A child JVM limited to C1 (where Vector API calls run their Java fallbacks) must
 * produce exactly the loss and gradients that this warmed-up, C2-compiled JVM produces.
 */
class JitTierDeterminismTest {
    static String fingerprint() {
        GptConfig cfg = new GptConfig(2, 2, 32, 16, 70, 0.1f, true);
        Gpt m = new Gpt(cfg, 5);
        FlatParameters flat = FlatParameters.of(m);
        Rng rng = new Rng(3);
        int[] x = new int[2 * 16], y = new int[2 * 16];
        for (int i = 0; i < x.length; i++) {
            x[i] = rng.nextInt(70);
            y[i] = rng.nextInt(70);
        }
        Tensor loss = m.loss(x, y, 2, 16);
        loss.backward();
        CRC32 crc = new CRC32();
        for (float g : flat.grad()) {
            int b = Float.floatToRawIntBits(g);
            crc.update(new byte[]{(byte) b, (byte) (b >> 8), (byte) (b >> 16), (byte) (b >> 24)});
        }
        return Integer.toHexString(Float.floatToRawIntBits(loss.item())) + ":" + Long.toHexString(crc.getValue());
    }

    public static void main(String[] args) {
        System.out.println("FINGERPRINT " + fingerprint());
    }

    @Test
    @Timeout(180)
    void c1OnlyJvmProducesTheSameBitsAsWarmedUpC2() throws IOException, InterruptedException {
        String warm = null;
        for (int i = 0; i < 30; i++) warm = fingerprint(); // let C2 compile the kernels
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                "-Djtrain.threads=1", JitTierDeterminismTest.class.getName()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(out).isZero();
        String cold = out.lines().filter(l -> l.startsWith("FINGERPRINT ")).findFirst().orElseThrow().substring(12);
        assertThat(cold).isEqualTo(warm);
    }
}
