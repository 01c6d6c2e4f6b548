package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Where the bf16 kernel cannot run (a CPU without AVX512_BF16, or {@code -Djtrain.bf16.kernel=fp32}), bf16 matmuls
 * round their operands to bf16 and compute in fp32, and {@link Bf16Gemm#backend()} says so and why. The choice is made
 * once per JVM, so this runs a child JVM with the option and checks what it prints: the backend line; a product
 * bitwise equal to SGEMM's on the rounded operands (and not to SGEMM's on the operands as given); and a product deeper
 * and wider than the fallback's blocks, transposed, against a double-precision reference on the rounded operands.
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
        Sgemm.sgemm(false, true, m, n, k, 1f, rounded(a), 0, k, rounded(b), 0, k, 0f, c2, 0, n);
        System.out.println("EQUALS_ROUNDED_SGEMM " + java.util.Arrays.equals(c1, c2));
        Bf16Gemm.gemm(false, true, m, n, k, 1f, Bf16.toBf16(a, 0, a.length), 0, k, Bf16.toBf16(b, 0, b.length), 0, k, 0f, c2, 0, n);
        System.out.println("BF16_OPERANDS_EQUAL " + java.util.Arrays.equals(c1, c2));

        // operands large enough that their rounding is split over the kernel threads (k within one block: bitwise)
        m = 256; n = 300; k = 512;
        a = new float[m * k];
        b = new float[n * k];
        for (int i = 0; i < a.length; i++) a[i] = (float) rnd.nextGaussian();
        for (int i = 0; i < b.length; i++) b[i] = (float) rnd.nextGaussian();
        c1 = new float[m * n];
        c2 = new float[m * n];
        Bf16Gemm.gemm(false, true, m, n, k, 1f, a, 0, k, b, 0, k, 0f, c1, 0, n);
        Sgemm.sgemm(false, true, m, n, k, 1f, rounded(a), 0, k, rounded(b), 0, k, 0f, c2, 0, n);
        System.out.println("SPLIT_EQUALS_ROUNDED_SGEMM " + java.util.Arrays.equals(c1, c2));

        // A transposed (k x m, lda > m), k over two blocks, n over two blocks; C accumulates onto beta * C
        m = 9; n = 2100; k = 1100;
        int lda = m + 3;
        a = new float[k * lda];
        b = new float[k * n];
        for (int i = 0; i < a.length; i++) a[i] = (float) (rnd.nextDouble() - 0.5);
        for (int i = 0; i < b.length; i++) b[i] = (float) (rnd.nextDouble() - 0.5);
        float[] c = new float[m * n];
        for (int i = 0; i < c.length; i++) c[i] = (float) rnd.nextDouble();
        float[] c0 = c.clone();
        Bf16Gemm.gemm(true, false, m, n, k, 0.75f, a, 0, lda, b, 0, n, 0.5f, c, 0, n);
        double worst = 0;
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0, abs = 0;
                for (int p = 0; p < k; p++) {
                    double t = (double) Bf16.round(a[p * lda + i]) * Bf16.round(b[p * n + j]);
                    sum += t;
                    abs += Math.abs(t);
                }
                double expect = 0.75 * sum + 0.5 * c0[i * n + j];
                worst = Math.max(worst, Math.abs(c[i * n + j] - expect) / (0.75 * abs * k * 0x1p-24 + 0x1p-24));
            }
        }
        System.out.println("BLOCKED_WITHIN_FP32_BOUND " + (worst <= 1));
    }

    private static float[] rounded(float[] x) {
        float[] r = new float[x.length];
        for (int i = 0; i < x.length; i++) r[i] = Bf16.round(x[i]);
        return r;
    }

    @Test
    void withoutTheBf16KernelMatmulsRoundTheirOperandsAndRunInFp32AndSaySo() throws Exception {
        String out = ChildJvm.run(Bf16FallbackTest.class, "-Djtrain.bf16.kernel=fp32", 60);
        assertThat(out).contains("BACKEND bf16 matmuls: fp32 compute on bf16-rounded operands (jtrain.bf16.kernel=fp32)",
                "NATIVE false", "EQUALS_SGEMM false", "EQUALS_ROUNDED_SGEMM true", "BF16_OPERANDS_EQUAL true",
                "SPLIT_EQUALS_ROUNDED_SGEMM true", "BLOCKED_WITHIN_FP32_BOUND true");
    }

    @Test
    void herePlainlyTheNativeKernelRuns() {
        assertThat(Bf16Gemm.isNative()).as(Bf16Gemm.backend()).isEqualTo(CpuFeatures.CURRENT.avx512bf16());
    }
}
