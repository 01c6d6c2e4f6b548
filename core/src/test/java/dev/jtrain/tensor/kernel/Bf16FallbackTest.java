package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Where the bf16 kernel cannot run (a CPU without AVX512_BF16, or {@code -Djtrain.bf16.kernel=fp32}), bf16 matmuls
 * compute in fp32 and {@link Bf16Gemm#backend()} says so and why. The choice is made once per JVM, so this runs a
 * child JVM with the option and checks what it prints: the backend line, and a product bitwise equal to SGEMM's.
 */
@Timeout(60)
class Bf16FallbackTest {
    /** Child: prints the backend, then whether bf16 and fp32 products are bitwise equal. */
    public static void main(String[] args) {
        SplittableRandom rnd = new SplittableRandom(5);
        int m = 70, n = 90, k = 130;
        float[] a = new float[m * k], b = new float[k * n], c1 = new float[m * n], c2 = new float[m * n];
        for (int i = 0; i < a.length; i++) a[i] = (float) rnd.nextDouble();
        for (int i = 0; i < b.length; i++) b[i] = (float) rnd.nextDouble();
        Bf16Gemm.gemm(false, true, m, n, k, 1f, a, 0, k, b, 0, k, 0f, c1, 0, n);
        Sgemm.sgemm(false, true, m, n, k, 1f, a, 0, k, b, 0, k, 0f, c2, 0, n);
        System.out.println("BACKEND " + Bf16Gemm.backend());
        System.out.println("NATIVE " + Bf16Gemm.isNative());
        System.out.println("EQUALS_SGEMM " + java.util.Arrays.equals(c1, c2));
    }

    @Test
    void withoutTheBf16KernelMatmulsRunInFp32AndSaySo() throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Djtrain.bf16.kernel=fp32",
                "-cp", System.getProperty("java.class.path"), Bf16FallbackTest.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("BACKEND bf16 matmuls: fp32 compute (jtrain.bf16.kernel=fp32)", "NATIVE false", "EQUALS_SGEMM true");
    }

    @Test
    void herePlainlyTheNativeKernelRuns() {
        assertThat(Bf16Gemm.isNative()).as(Bf16Gemm.backend()).isEqualTo(CpuFeatures.CURRENT.avx512bf16());
    }
}
