package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The choice between the AMX and the AVX512_BF16 kernel, and what only the AMX path has: k padded to whole blocks of
 * 32 (the pad must read as zero in A and in B, whatever the reused buffers held before) and A panels of 32 rows.
 * {@link Bf16GemmTest} holds whichever kernel this machine runs to the bf16 error bound on odd shapes; this test
 * says which one that is, and runs the other native one in a child JVM ({@code -Djtrain.bf16.kernel=avx512}) where
 * both exist, so neither goes untested on an AMX machine.
 */
@Timeout(120)
@ExtendWith(RestoresKernelThreads.class)
class Bf16AmxTest {
    @Test
    void autoRunsTheTilesWhereTheCpuHasThem() {
        assertThat(Bf16Gemm.isAmx()).as(Bf16Gemm.backend() + "; CPU AMX-BF16: " + CpuFeatures.CURRENT.amxBf16())
                .isEqualTo(CpuFeatures.CURRENT.amxBf16());
        if (Bf16Gemm.isAmx()) assertThat(Bf16Gemm.backend()).contains("AMX tiles (tdpbf16ps)");
    }

    /**
     * The workspace's buffers are reused from product to product: after a product whose B and A were all NaN, products
     * whose k leaves part of the last block empty (odd k, k under 32, k a pair short of a block) and whose m leaves part
     * of the last panel empty must still be exact on the rounded operands. Fails when the pad of either operand keeps
     * what the buffer held (a NaN there meets the other operand's zero as NaN).
     */
    @Test
    void theKPadOfReusedBuffersReadsAsZero() {
        Assumptions.assumeTrue(Bf16Gemm.isNative(), "no native bf16 kernel here: " + Bf16Gemm.backend());
        SplittableRandom rnd = new SplittableRandom(31);
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            for (boolean tA : new boolean[]{false, true}) {
                for (boolean tB : new boolean[]{false, true}) {
                    for (int k : new int[]{1, 7, 30, 33, 62, 95}) {
                        int big = 160, m = 45, n = 70;
                        float[] nan = new float[big * big];
                        Arrays.fill(nan, Float.NaN);
                        Bf16Gemm.gemm(tA, tB, big, big, big, 1f, nan, 0, big, nan, 0, big, 0f, new float[big * big], 0, big);
                        float[] a = new float[m * k], b = new float[k * n], c = new float[m * n];
                        for (int i = 0; i < a.length; i++) a[i] = Bf16.round((float) (rnd.nextDouble() - 0.5));
                        for (int i = 0; i < b.length; i++) b[i] = Bf16.round((float) (rnd.nextDouble() - 0.5));
                        Bf16Gemm.gemm(tA, tB, m, n, k, 1f, a, 0, tA ? m : k, b, 0, tB ? k : n, 0f, c, 0, n);
                        for (int i = 0; i < m; i++) {
                            for (int j = 0; j < n; j++) {
                                double exact = 0, magnitude = 0;
                                for (int p = 0; p < k; p++) {
                                    double t = (double) a[tA ? p * m + i : i * k + p] * b[tB ? j * k + p : p * n + j];
                                    exact += t;
                                    magnitude += Math.abs(t);
                                }
                                assertThat((double) c[i * n + j]).as("tA=%s tB=%s k=%d threads=%d at (%d, %d)", tA, tB, k, threads, i, j)
                                        .isCloseTo(exact, org.assertj.core.data.Offset.offset(k * 0x1p-23 * magnitude + 1e-30));
                            }
                        }
                    }
                }
            }
        }
    }

    /** Child: the backend line, then whether bf16 products on odd shapes in every layout are within the bf16 bound. */
    public static void main(String[] args) {
        SplittableRandom rnd = new SplittableRandom(9);
        boolean within = true;
        for (int[] s : new int[][]{{37, 70, 81}, {64, 96, 1100}, {33, 40, 7}}) {
            for (int t = 0; t < 4; t++) {
                boolean tA = (t & 1) != 0, tB = (t & 2) != 0;
                int m = s[0], n = s[1], k = s[2];
                float[] a = new float[m * k], b = new float[k * n], c = new float[m * n];
                for (int i = 0; i < a.length; i++) a[i] = (float) (rnd.nextDouble() - 0.5);
                for (int i = 0; i < b.length; i++) b[i] = (float) (rnd.nextDouble() - 0.5);
                Bf16Gemm.gemm(tA, tB, m, n, k, 1f, a, 0, tA ? m : k, b, 0, tB ? k : n, 0f, c, 0, n);
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        double exact = 0, magnitude = 0;
                        for (int p = 0; p < k; p++) {
                            double x = a[tA ? p * m + i : i * k + p], y = b[tB ? j * k + p : p * n + j];
                            exact += x * y;
                            magnitude += Math.abs(x * y);
                        }
                        within &= Math.abs(c[i * n + j] - exact) <= (2 * Bf16.UNIT_ROUNDOFF + k * 0x1p-23) * magnitude * 1.02;
                    }
                }
            }
        }
        System.out.println("BACKEND " + Bf16Gemm.backend());
        System.out.println("AMX " + Bf16Gemm.isAmx());
        System.out.println("WITHIN_BF16_BOUND " + within);
    }

    @Test
    void theAvx512KernelStillRunsWhenAskedForOnAnAmxMachine() throws Exception {
        Assumptions.assumeTrue(CpuFeatures.CURRENT.avx512bf16(), "this CPU has no AVX512_BF16: nothing to choose between");
        String out = ChildJvm.run(Bf16AmxTest.class, "-Djtrain.bf16.kernel=avx512", 90);
        assertThat(out).contains("BACKEND bf16 matmuls: AVX512_BF16 (vdpbf16ps)", "AMX false", "WITHIN_BF16_BOUND true");
    }
}
