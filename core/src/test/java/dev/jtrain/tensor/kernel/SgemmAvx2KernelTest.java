package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The AVX2 + FMA machine code against the Java micro-kernel's arithmetic, bit for bit: each element is
 * {@code fma(a, b, acc)} over p in order from zero, then stored or added to C once. Bitwise, not within a
 * tolerance, because a machine that switches between the two kernels (an AVX-512 and an AVX2 host in one job, or
 * {@code -Djtrain.sgemm.kernel=vector}) must still compute the same bits. Runs wherever the CPU has AVX2 and FMA
 * (every x86-64 CI machine here); elsewhere it says so and is skipped.
 */
class SgemmAvx2KernelTest {
    private static final int MR = SgemmAvx2Kernel.MR, NR = SgemmAvx2Kernel.NR;

    @Test
    void theMachineCodeIsChosenWhereverItCanRunTheSelectedTile() {
        boolean fits = SgemmKernel.MR == MR && SgemmKernel.NR == NR;
        boolean expected = fits && SgemmAvx2Kernel.available() && KernelOptions.CURRENT.sgemmKernel() != KernelOptions.SgemmMode.VECTOR;
        assertThat(SgemmKernel.NATIVE).as(Sgemm.backend()).isEqualTo(expected);
        assertThat(Sgemm.backend()).contains(expected ? "machine-code" : "Vector API");
    }

    @Test
    void matchesTheJavaKernelsArithmeticBitwiseAndWritesOnlyItsTiles() {
        Assumptions.assumeTrue(SgemmAvx2Kernel.available(),
                "the AVX2 SGEMM machine code cannot run here: " + SgemmAvx2Kernel.unavailableReason());
        SplittableRandom rnd = new SplittableRandom(20261127L);
        int stride = Sgemm.KC;
        for (int kc : new int[] {1, 3, 4, 5, 37, 256}) {
            for (int panels : new int[] {1, 3}) {
                for (boolean rowA : new boolean[] {false, true}) {
                    for (boolean accumulate : new boolean[] {false, true}) {
                        int apOff = 7, bpOff = 5, outOff = 11, ldo = panels * NR + 3;
                        float[] ap = random(rnd, apOff + MR * stride), bp = random(rnd, bpOff + panels * kc * NR);
                        float[] out = random(rnd, outOff + MR * ldo + 4);
                        float[] expected = out.clone();
                        for (int r = 0; r < MR; r++) {
                            for (int j = 0; j < panels * NR; j++) {
                                int t = j / NR, col = j % NR;
                                float acc = 0f;
                                for (int p = 0; p < kc; p++) {
                                    float a = rowA ? ap[apOff + r * stride + p] : ap[apOff + p * MR + r];
                                    acc = Math.fma(a, bp[bpOff + t * kc * NR + p * NR + col], acc);
                                }
                                int o = outOff + r * ldo + j;
                                expected[o] = accumulate ? expected[o] + acc : acc;
                            }
                        }
                        SgemmAvx2Kernel.run(slice(ap, apOff), rowA ? stride : 0, slice(bp, bpOff), kc, panels,
                                slice(out, outOff), ldo, accumulate);
                        assertThat(out).as("kc=%d panels=%d rowA=%b accumulate=%b (the 3 floats past each row "
                                + "and the ones around the tile must be untouched)", kc, panels, rowA, accumulate)
                                .isEqualTo(expected);
                    }
                }
            }
        }
    }

    private static MemorySegment slice(float[] x, int off) {
        return MemorySegment.ofArray(x).asSlice((long) off * Float.BYTES);
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }
}
