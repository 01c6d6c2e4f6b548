package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The AVX2 + FMA and AVX-512 machine code against the Java micro-kernels' arithmetic, bit for bit: each element is
 * {@code fma(a, b, acc)} over p in order from zero, then stored or added to C once. Bitwise, not within a
 * tolerance, because a machine that switches between the two kernels (an AVX-512 and an AVX2 host in one job, or
 * {@code -Djtrain.sgemm.kernel=vector}) must still compute the same bits. Each runs wherever the CPU has its
 * instructions (AVX2 and FMA on every x86-64 CI machine here; AVX-512F on the Zen 4/5 and Xeon hosts); elsewhere it
 * says so and is skipped.
 */
class SgemmMachineKernelTest {

    @Test
    void theMachineCodeIsChosenWhereverItCanRunTheSelectedTile() {
        boolean expected = (SgemmMachineKernel.AVX2.fits(SgemmKernel.MR, SgemmKernel.NR) && SgemmMachineKernel.AVX2.available()
                || SgemmMachineKernel.AVX512.fits(SgemmKernel.MR, SgemmKernel.NR) && SgemmMachineKernel.AVX512.available())
                && KernelOptions.CURRENT.sgemmKernel() != KernelOptions.SgemmMode.VECTOR;
        assertThat(SgemmKernel.NATIVE).as(Sgemm.backend()).isEqualTo(expected);
        assertThat(Sgemm.backend()).contains(expected ? "machine-code" : "Vector API");
    }

    @Test
    void theAvx2MachineCodeMatchesTheJavaKernelsArithmeticBitwiseAndWritesOnlyItsTiles() {
        check(SgemmMachineKernel.AVX2);
    }

    /** The same for the AVX-512 machine code of the 12 x 32 tile, where the CPU has AVX-512F. */
    @Test
    void theAvx512MachineCodeMatchesTheJavaKernelsArithmeticBitwise() {
        check(SgemmMachineKernel.AVX512);
    }

    @Test
    void aPanelOrTileReachingPastItsArrayIsRefusedBeforeTheMachineCodeRuns() {
        SgemmMachineKernel kernel = SgemmKernel.NATIVE ? (SgemmMachineKernel.AVX512.fits(SgemmKernel.MR, SgemmKernel.NR)
                ? SgemmMachineKernel.AVX512 : SgemmMachineKernel.AVX2) : SgemmMachineKernel.AVX2;
        Assumptions.assumeTrue(kernel.available(), "the " + kernel.isa + " SGEMM machine code cannot run here: " + kernel.unavailableReason());
        int mr = kernel.mr, nr = kernel.nr, kc = 8, ldo = nr;
        MemorySegment ap = MemorySegment.ofArray(new float[kc * mr]), bp = MemorySegment.ofArray(new float[kc * nr]);
        float[] out = new float[mr * ldo];
        MemorySegment o = MemorySegment.ofArray(out);
        kernel.run(ap, 0, 0, bp, 0, kc, 1, o, 0, ldo, false); // exactly fits
        java.util.Arrays.fill(out, 7f);
        assertThatThrownBy(() -> kernel.run(ap, 0, 0, bp, 0, kc, 1, o, 1, ldo, false))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("output tile");
        assertThatThrownBy(() -> kernel.run(ap, 1, 0, bp, 0, kc, 1, o, 0, ldo, false))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("A panel");
        assertThatThrownBy(() -> kernel.run(ap, 0, 0, bp, 0, kc, 2, o, 0, ldo, false))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("B panels");
        assertThatThrownBy(() -> kernel.run(ap, 0, 2 * kc, bp, 0, kc, 1, o, 0, ldo, false)) // row-major rows 2 kc apart
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("A panel");
        assertThat(out).containsOnly(7f);
    }

    private static void check(SgemmMachineKernel kernel) {
        Assumptions.assumeTrue(kernel.available(), "the " + kernel.isa + " SGEMM machine code cannot run here: " + kernel.unavailableReason());
        int mr = kernel.mr, nr = kernel.nr;
        SplittableRandom rnd = new SplittableRandom(20261127L);
        int stride = Sgemm.KC;
        for (int kc : new int[] {1, 3, 4, 5, 37, 256}) {
            for (int panels : new int[] {1, 3}) {
                for (boolean rowA : new boolean[] {false, true}) {
                    for (boolean accumulate : new boolean[] {false, true}) {
                        int apOff = 7, bpOff = 5, outOff = 11, ldo = panels * nr + 3;
                        float[] ap = random(rnd, apOff + mr * stride), bp = random(rnd, bpOff + panels * kc * nr);
                        float[] out = random(rnd, outOff + mr * ldo + 4);
                        float[] expected = out.clone();
                        for (int r = 0; r < mr; r++) {
                            for (int j = 0; j < panels * nr; j++) {
                                int t = j / nr, col = j % nr;
                                float acc = 0f;
                                for (int p = 0; p < kc; p++) {
                                    float a = rowA ? ap[apOff + r * stride + p] : ap[apOff + p * mr + r];
                                    acc = Math.fma(a, bp[bpOff + t * kc * nr + p * nr + col], acc);
                                }
                                int o = outOff + r * ldo + j;
                                expected[o] = accumulate ? expected[o] + acc : acc;
                            }
                        }
                        kernel.run(MemorySegment.ofArray(ap), apOff, rowA ? stride : 0, MemorySegment.ofArray(bp), bpOff,
                                kc, panels, MemorySegment.ofArray(out), outOff, ldo, accumulate);
                        assertThat(out).as("%d x %d tile: kc=%d panels=%d rowA=%b accumulate=%b (the 3 floats past each row "
                                + "and the ones around the tile must be untouched)", mr, nr, kc, panels, rowA, accumulate)
                                .isEqualTo(expected);
                    }
                }
            }
        }
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }
}
