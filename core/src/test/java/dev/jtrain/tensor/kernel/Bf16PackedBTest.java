package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link Bf16PackedB}: an operand packed once, then multiplied over k ranges and column prefixes, must give
 * {@link Bf16Gemm}'s result on the same range bit for bit (the attention products rely on it; Bf16GemmTest holds
 * that one to the bf16 bound). Shapes are odd on purpose: m not a multiple of the 12-row tiles, column prefixes that
 * end mid-panel, odd k, ranges that start inside the packed operand.
 */
class Bf16PackedBTest {
    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }

    private static void check(boolean transA, boolean transB, int m, int k, int n, int k0, int k1, int n1, long seed) {
        check(transA, transB, m, k, n, k0, k1, n1, seed, Float.NaN);
    }

    /** {@code past}: unless NaN, the value of every element of op(B)'s row k1, just past the range (if inside B). */
    private static void check(boolean transA, boolean transB, int m, int k, int n, int k0, int k1, int n1, long seed,
                              float past) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int kc = k1 - k0;
        int lda = (transA ? m : kc) + 3, ldb = (transB ? k : n) + 5, ldc = n1 + 2;
        float[] a = random(rnd, (transA ? kc : m) * lda + 7), b = random(rnd, (transB ? n : k) * ldb + 9);
        if (!Float.isNaN(past) && k1 < k) {
            for (int j = 0; j < n; j++) b[9 + (transB ? j * ldb + k1 : k1 * ldb + j)] = past;
        }
        float[] want = new float[m * ldc + 1], got = new float[m * ldc + 1];
        Arrays.fill(want, 42f);
        Arrays.fill(got, 42f);
        int bAt = transB ? k0 : k0 * ldb; // op(B)[k0, 0]
        Bf16Gemm.gemm(transA, transB, m, n1, kc, 1f, a, 7, lda, b, 9 + bAt, ldb, 0f, want, 1, ldc);
        new Bf16PackedB().pack(transB, k, n, b, 9, ldb).multiply(transA, m, k0, k1, n1, a, 7, lda, got, 1, ldc);
        String where = "transA=" + transA + " transB=" + transB + " m=" + m + " k=[" + k0 + ", " + k1 + ") of " + k
                + " n1=" + n1 + " of " + n;
        assertThat(got).as(where).containsExactly(want); // the padding around C (42) untouched too
    }

    @Test
    void aRangeOfAnOperandPackedOnceIsTheGemmOfThatRangeBitForBit() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Bf16PackedB.available(),
                "no AVX512_BF16 kernel here (" + Bf16Gemm.backend() + "): attention uses the per-block GEMMs instead");
        long seed = 1;
        for (boolean tA : new boolean[]{false, true}) {
            for (boolean tB : new boolean[]{false, true}) {
                check(tA, tB, 64, 64, 256, 0, 64, 192, seed++);   // S = q·kᵀ of a row block: a column prefix
                check(tA, tB, 64, 256, 64, 0, 192, 64, seed++);   // y = P·v: a k prefix
                check(tA, tB, 64, 256, 64, 128, 256, 64, seed++); // dv = Pᵀ·dy: a k suffix
                check(tA, tB, 29, 131, 77, 0, 131, 77, seed++);   // all of it, odd k, ragged tiles both ways
                check(tA, tB, 13, 131, 45, 64, 131, 33, seed++);  // odd range end, prefix inside a panel
                check(tA, tB, 1, 2, 1, 0, 1, 1, seed++);
                // an odd range ending inside B: the row just past it (a future token's key or value) is never read,
                // even where it is infinite (0 * inf would make C NaN)
                check(tA, tB, 13, 131, 45, 0, 63, 33, seed++, Float.POSITIVE_INFINITY);
                check(tA, tB, 29, 64, 77, 2, 35, 77, seed++, Float.NEGATIVE_INFINITY);
                check(tA, tB, 1, 2, 1, 0, 1, 1, seed++, Float.POSITIVE_INFINITY);
            }
        }
    }

    /**
     * A causal block's panels stop at their own rows' bounds ({@link Bf16PackedB#multiplyCausal}). Over op(B)'s
     * columns (S = q·kᵀ): every entry a row needs, its prefix up to firstRow + i, is bitwise the full rectangle's.
     * Over k (y = P·v), with A zero past each row's prefix as P is: the whole result is bitwise the full product's.
     * 64-row blocks at every offset of a 256-long triangle, so both the 12-row panels and the last one of 4; and a
     * block of 30 rows (an odd bound on k keeps a panel's whole range). A bound one panel or one pair short fails.
     */
    @Test
    void aCausalBlockStopsEachPanelAtItsRowsBoundWithTheSameBits() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Bf16PackedB.available(), "no AVX512_BF16 kernel here: " + Bf16Gemm.backend());
        SplittableRandom rnd = new SplittableRandom(20261204L);
        int t = 256, hs = 64;
        float[] q = random(rnd, t * hs), keys = random(rnd, t * hs), values = random(rnd, t * hs);
        Bf16PackedB keysT = new Bf16PackedB().pack(true, hs, t, keys, 0, hs);
        Bf16PackedB vals = new Bf16PackedB().pack(false, t, hs, values, 0, hs);
        for (int[] block : new int[][]{{0, 64}, {64, 64}, {128, 64}, {192, 64}, {97, 30}}) {
            int r0 = block[0], m = block[1], r1 = r0 + m;
            float[] full = new float[m * t], causal = new float[m * t];
            Arrays.fill(causal, Float.NaN);
            keysT.multiply(false, m, 0, hs, r1, q, r0 * hs, hs, full, 0, t);
            keysT.multiplyCausal(true, r0, false, m, 0, hs, r1, q, r0 * hs, hs, causal, 0, t);
            for (int i = 0; i < m; i++) {
                assertThat(Arrays.copyOfRange(causal, i * t, i * t + r0 + i + 1)).as("S row %d of block at %d", i, r0)
                        .containsExactly(Arrays.copyOfRange(full, i * t, i * t + r0 + i + 1));
            }
            float[] p = new float[m * t];
            for (int i = 0; i < m; i++) {
                for (int j = 0; j <= r0 + i; j++) p[i * t + j] = (float) rnd.nextDouble();
            }
            float[] y = new float[m * hs], yCausal = new float[m * hs];
            vals.multiply(false, m, 0, r1, hs, p, 0, t, y, 0, hs);
            vals.multiplyCausal(false, r0, false, m, 0, r1, hs, p, 0, t, yCausal, 0, hs);
            assertThat(yCausal).as("P·v of block at %d", r0).containsExactly(y);
        }
        assertThatThrownBy(() -> vals.multiplyCausal(false, 0, false, 4, 2, 10, 8, new float[40], 0, 8, new float[32], 0, 8))
                .hasMessageContaining("k0=2");
    }

    @Test
    void aRangeOutsideTheOperandOrStartingMidPairIsRefused() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Bf16PackedB.available(), "Bf16PackedB runs on the AVX512_BF16 kernel only; here " + Bf16Gemm.backend());
        Bf16PackedB p = new Bf16PackedB().pack(false, 10, 8, new float[80], 0, 8);
        float[] a = new float[100], c = new float[100];
        assertThatThrownBy(() -> p.multiply(false, 2, 1, 10, 8, a, 0, 9, c, 0, 8)).hasMessageContaining("k0 must be even");
        assertThatThrownBy(() -> p.multiply(false, 2, 0, 11, 8, a, 0, 11, c, 0, 8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.multiply(false, 2, 0, 10, 9, a, 0, 10, c, 0, 9)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.multiply(false, 20, 0, 10, 8, a, 0, 10, c, 0, 8)).hasMessageContaining("needs");
    }
}
