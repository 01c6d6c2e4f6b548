package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link Bf16Gemm#gemmPackedB}: B given as the bf16 words {@link Bf16#pack} made of it (a linear layer's saved input)
 * must give {@link Bf16Gemm#gemm}'s result on B widened back to fp32, bit for bit, in every case the packing meets:
 * odd k (the last k paired with zero), several k blocks (a pair row index that starts mid-array), columns that end
 * inside a panel (n below the row stride), several column blocks, both A layouts, beta 0 and 1, one and two threads.
 */
class Bf16PackedWordsTest {
    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }

    @ParameterizedTest(name = "m={0} n={1} ldb={2} k={3} threads={4}")
    @CsvSource({"37, 96, 96, 131, 1", "12, 32, 32, 2, 1", "29, 70, 96, 2051, 1", "64, 320, 320, 384, 2", "50, 288, 320, 1537, 2",
            "1, 1, 32, 1, 1"})
    void packedBIsTheGemmOnTheWidenedB(int m, int n, int ldb, int k, int threads) {
        assumeTrue(Bf16Gemm.takesPackedB(ldb), "no AVX512_BF16 here (" + Bf16Gemm.backend() + "): linear layers widen"
                + " their saved input and use Bf16Gemm.gemm instead");
        int saved = Parallel.threads();
        Parallel.setThreads(threads);
        try {
            SplittableRandom rnd = new SplittableRandom(m * 31L + k);
            float[] bStored = random(rnd, k * ldb);
            int[] words = new int[Bf16.packedWords(bStored.length)];
            Bf16.pack(bStored, 0, bStored.length, words);
            float[] widened = new float[bStored.length];
            Bf16.unpack(words, bStored.length, widened, 0);
            for (boolean transA : new boolean[]{false, true}) {
                for (float beta : new float[]{0f, 1f}) {
                    int lda = (transA ? m : k) + 3, ldc = n + 5;
                    float[] a = random(rnd, (transA ? k : m) * lda);
                    float[] c0 = random(rnd, m * ldc);
                    float[] want = c0.clone(), got = c0.clone();
                    Bf16Gemm.gemm(transA, false, m, n, k, 1f, a, 0, lda, widened, 0, ldb, beta, want, 0, ldc);
                    Bf16Gemm.gemmPackedB(transA, m, n, k, 1f, a, 0, lda, words, ldb, beta, got, 0, ldc);
                    assertThat(Arrays.mismatch(got, want)).as("first element that differs, transA=%s beta=%s (-1: none)",
                            transA, beta).isEqualTo(-1);
                }
            }
        } finally {
            Parallel.setThreads(saved);
        }
    }

    @org.junit.jupiter.api.Test
    void aStrideOffTheBlocksOrWordsTooFewAreRefused() {
        assumeTrue(Bf16Gemm.takesPackedB(32), "no AVX512_BF16 here");
        assertThat(Bf16Gemm.takesPackedB(48)).isFalse();
        float[] a = new float[64], c = new float[64];
        assertThatThrownBy(() -> Bf16Gemm.gemmPackedB(false, 2, 8, 8, 1f, a, 0, 8, new int[16], 48, 0f, c, 0, 8))
                .hasMessageContaining("ldb a positive multiple of 32");
        assertThatThrownBy(() -> Bf16Gemm.gemmPackedB(false, 2, 8, 8, 1f, a, 0, 8, new int[16], 0, 0f, c, 0, 8))
                .hasMessageContaining("ldb a positive multiple of 32");
        assertThatThrownBy(() -> Bf16Gemm.gemmPackedB(false, 2, -8, 8, 1f, a, 0, 8, new int[16], 32, 0f, c, 0, 8))
                .hasMessageContaining("negative size");
        assertThatThrownBy(() -> Bf16Gemm.gemmPackedB(false, 2, 8, 8, 1f, a, 0, 8, new int[16], 32, 0f, c, 0, 8))
                .hasMessageContaining("needs 128 words");
        // k = 2 rows of n = 8 floats: packing reads the last row's whole block of 32 floats, so 16 + 16 words are
        // needed, not the 16 + 4 that n alone would say (those passed and failed deep in packing)
        assertThatThrownBy(() -> Bf16Gemm.gemmPackedB(false, 2, 8, 2, 1f, a, 0, 2, new int[20], 32, 0f, c, 0, 8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs 32 words");
        Bf16Gemm.gemmPackedB(false, 2, 8, 2, 1f, a, 0, 2, new int[32], 32, 0f, c, 0, 8);
    }
}
