package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Checks {@link Bf16Gemm} on odd shapes (ragged tiles, odd k, several k and n blocks) in every transpose
 * combination against two double-accumulating references:
 * <ul>
 *   <li>on the bf16-rounded inputs, within the fp32 summation bound k * 2^-23 * sum |a||b| (+ the beta term):
 *       this is the kernel's own error, so a wrong index, a lost pair, truncation instead of round-to-nearest-even
 *       or no rounding at all (fp32 compute is off by ~2^-8) fails it;
 *   <li>on the fp32 inputs, within the bf16 bound (2 * 2^-8 + k * 2^-23) * sum |a||b|: what a caller may rely on.
 * </ul>
 * Both hold for whichever path runs here: the AVX512_BF16 kernel, or the fallback that rounds the operands and
 * multiplies in fp32 (setUp prints which).
 */
@ExtendWith(RestoresKernelThreads.class)
class Bf16GemmTest {
    private static final long SEED = 20261125L;

    @BeforeEach
    void setUp() {
        System.out.println("Bf16GemmTest seed=" + SEED + ", " + Bf16Gemm.backend());
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }

    private static float[] rounded(float[] x) {
        float[] r = x.clone();
        for (int i = 0; i < r.length; i++) r[i] = Bf16.round(r[i]);
        return r;
    }

    /** Checks one product; returns nothing, fails with the first element out of bounds. */
    private static void check(boolean tA, boolean tB, int m, int n, int k, float alpha, float beta, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int lda = (tA ? m : k) + 3, ldb = (tB ? k : n) + 5, ldc = n + 2;
        float[] a = random(rnd, (tA ? k : m) * lda), b = random(rnd, (tB ? n : k) * ldb);
        float[] c0 = random(rnd, m * ldc);
        float[] c = c0.clone();
        if (beta == 0f) Arrays.fill(c, Float.NaN); // beta == 0 must not read C
        Bf16Gemm.gemm(tA, tB, m, n, k, alpha, a, 0, lda, b, 0, ldb, beta, c, 0, ldc);
        float[] ar = rounded(a), br = rounded(b);
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double exact = 0, onRounded = 0, magnitude = 0;
                for (int p = 0; p < k; p++) {
                    int ai = tA ? p * lda + i : i * lda + p, bi = tB ? j * ldb + p : p * ldb + j;
                    exact += (double) a[ai] * b[bi];
                    onRounded += (double) ar[ai] * br[bi];
                    magnitude += Math.abs((double) a[ai] * b[bi]);
                }
                double prior = beta == 0f ? 0 : (double) beta * c0[i * ldc + j];
                double got = c[i * ldc + j];
                double tight = Math.abs(alpha) * k * 0x1p-23 * magnitude * 1.02 + Math.abs(prior) * 0x1p-22 + 1e-30;
                double bf16 = Math.abs(alpha) * (2 * Bf16.UNIT_ROUNDOFF + k * 0x1p-23) * magnitude * 1.02 + Math.abs(prior) * 0x1p-22;
                String where = "tA=" + tA + " tB=" + tB + " " + m + "x" + n + "x" + k + " alpha=" + alpha + " beta=" + beta
                        + " at (" + i + ", " + j + ")";
                assertThat(Math.abs(got - (alpha * onRounded + prior))).as("vs rounded inputs, " + where).isLessThanOrEqualTo(tight);
                assertThat(Math.abs(got - (alpha * exact + prior))).as("vs fp32 inputs, " + where).isLessThanOrEqualTo(bf16);
            }
        }
        for (int i = 0; i < m; i++) {
            for (int j = n; j < ldc; j++) {
                if (beta == 0f) assertThat(c[i * ldc + j]).as("padding of C untouched").isNaN();
                else assertThat(c[i * ldc + j]).as("padding of C untouched").isEqualTo(c0[i * ldc + j]);
            }
        }
    }

    @Test
    void matchesTheReferencesOnOddShapesInEveryLayout() {
        // on 2 threads the last two split C by columns with A packed by both together (Bf16Gemm.sharedA), the last
        // over two k blocks; 40, 64 and 100 rows end in a panel of 4 (the 4-row kernel, into C), 27 in one of 3 (the
        // 4-row kernel, through the tiles)
        int[][] shapes = {{17, 33, 81}, {25, 31, 7}, {40, 100, 513}, {97, 65, 1101}, {30, 600, 130}, {13, 1, 999},
                {27, 70, 64}, {64, 96, 130}, {120, 200, 300}, {100, 150, 1500}};
        long seed = SEED;
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            for (int[] s : shapes) {
                if (threads > 1 && (long) s[0] * s[1] * s[2] < 1 << 20) continue; // runs on one thread (Bf16Gemm.run)
                for (int t = 0; t < 4; t++) {
                    check((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], 1f, 0f, seed++);
                    check((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], -0.75f, 0.5f, seed++);
                    check((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], 1f, 1f, seed++); // adds into C from the kernel
                    check((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], 2f, 0f, seed++); // through the tiles, C unread
                }
            }
        }
    }

    /**
     * More rows than one packed A block holds ({@link Bf16Gemm#MC} for the AVX-512 kernel, {@link Bf16AmxWorkspace#MC}
     * for AMX): one thread packs A in two blocks.
     */
    @Test
    void rowsBeyondOneABlockMatchTheReferences() {
        long seed = SEED + 3;
        int rows = Math.max(Bf16Gemm.MC, Bf16AmxWorkspace.MC) + 9;
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            for (int t = 0; t < 4; t++) {
                check((t & 1) != 0, (t & 2) != 0, rows, 33, 40, 1f, 0f, seed++);
                check((t & 1) != 0, (t & 2) != 0, rows, 33, 40, -0.75f, 0.5f, seed++);
            }
        }
    }

    /**
     * Operands held in bf16 ({@code short[]}) give bitwise the product of the same values widened to fp32, which the
     * test above checks against the references: every layout, odd k, ragged tiles, k over two blocks, odd offsets and
     * leading dimensions (so a row's pairs do not start on a 4-byte boundary), and 1 and 2 threads (the second splits C
     * by columns with A packed by both threads together, or by rows), with NaN in A's padding, which no packer may
     * read, and both parities of lda.
     */
    @Test
    void bf16OperandsGiveTheBitsOfTheirValuesWidenedToFp32() {
        // without the kernel both sides are the same widening fallback; Bf16FallbackTest checks that path
        org.junit.jupiter.api.Assumptions.assumeTrue(Bf16Gemm.isNative(), "no AVX512_BF16 here: " + Bf16Gemm.backend());
        int[][] shapes = {{17, 33, 81}, {25, 31, 7}, {97, 65, 1101}, {97, 65, 1100}, {13, 1, 999}, {120, 200, 300},
                {30, 600, 130}, {1, 40, 64}};
        long seed = SEED + 7;
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            for (int[] s : shapes) {
                for (int t = 0; t < 8; t++) {
                    boolean tA = (t & 1) != 0, tB = (t & 2) != 0;
                    int m = s[0], n = s[1], k = s[2];
                    SplittableRandom rnd = new SplittableRandom(seed++);
                    int lda = (tA ? m : k) + (t < 4 ? 3 : 2), ldb = (tB ? k : n) + 1, aOff = 1, bOff = 3, ldc = n + 2;
                    short[] a = Bf16.toBf16(random(rnd, aOff + (tA ? k : m) * lda), 0, aOff + (tA ? k : m) * lda);
                    short[] b = Bf16.toBf16(random(rnd, bOff + (tB ? n : k) * ldb), 0, bOff + (tB ? n : k) * ldb);
                    // NaN in A's padding (past each stored row's values), which no product may read
                    for (int r = 0, rows = tA ? k : m, cols = tA ? m : k; r < rows; r++) {
                        Arrays.fill(a, aOff + r * lda + cols, aOff + (r + 1) * lda, (short) 0x7FC0);
                    }
                    float[] c0 = random(rnd, m * ldc);
                    // NaN through the packing buffers first: a word's unused half (an odd k's pair) that kept it would
                    // spread NaN into C, although the value it pairs with is zero
                    short[] nans = new short[(m + 1) * (k + 2) + (n + 1) * (k + 2)];
                    Arrays.fill(nans, (short) 0x7FC0);
                    Bf16Gemm.gemm(tA, tB, m, n, k + 1, 1f, nans, 0, tA ? m : k + 1, nans, 0, tB ? k + 1 : n, 0f, new float[m * n], 0, n);
                    for (float[] ab : new float[][]{{1f, 0f}, {-0.75f, 0.5f}, {1f, 1f}}) {
                        float[] got = c0.clone(), want = c0.clone();
                        Bf16Gemm.gemm(tA, tB, m, n, k, ab[0], a, aOff, lda, b, bOff, ldb, ab[1], got, 0, ldc);
                        Bf16Gemm.gemm(tA, tB, m, n, k, ab[0], Bf16.widen(a, 0, a.length), aOff, lda, Bf16.widen(b, 0, b.length),
                                bOff, ldb, ab[1], want, 0, ldc);
                        assertThat(got).as("tA=%s tB=%s %dx%dx%d lda=%d alpha=%s beta=%s threads=%d", tA, tB, m, n, k, lda, ab[0], ab[1], threads)
                                .isEqualTo(want);
                    }
                }
            }
        }
    }

    /**
     * A bf16 A stored m x k with even offset, row stride and k is read by the kernel where it is (whole 12-row panels;
     * the last rows packed), unless its rows crowd the L1 sets more than a packed panel; either way the bits are those
     * of the widened product. Rows back to back, padded rows, several k blocks, rows 4 KiB apart (packed), a ragged
     * last panel, both column splits of two threads, and NaN past each row's values, which no panel may read: a panel
     * read from the wrong row, pair or k block changes the result.
     */
    @Test
    void aBf16AStoredRowMajorIsReadInPlaceWithTheBitsOfThePackedProduct() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Bf16Gemm.isNative(), "no AVX512_BF16 here: " + Bf16Gemm.backend());
        // m, n, k, lda - k, aOff
        int[][] shapes = {{12, 64, 256, 0, 0}, {49, 70, 256, 2, 2}, {150, 96, 1024, 0, 0}, {97, 40, 1100, 0, 4},
                {61, 33, 2048, 0, 0}, {30, 600, 130, 6, 0}, {25, 300, 64, 0, 2}};
        long seed = SEED + 11;
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            for (int[] s : shapes) {
                int m = s[0], n = s[1], k = s[2], lda = k + s[3], aOff = s[4], ldb = n + 1, ldc = n + 3;
                SplittableRandom rnd = new SplittableRandom(seed++);
                short[] a = Bf16.toBf16(random(rnd, aOff + m * lda), 0, aOff + m * lda);
                for (int r = 0; r < m; r++) Arrays.fill(a, aOff + r * lda + k, aOff + (r + 1) * lda, (short) 0x7FC0);
                Arrays.fill(a, 0, aOff, (short) 0x7FC0);
                short[] b = Bf16.toBf16(random(rnd, k * ldb), 0, k * ldb);
                float[] c0 = random(rnd, m * ldc);
                for (float[] ab : new float[][]{{1f, 0f}, {1f, 1f}, {-0.75f, 0.5f}}) {
                    float[] got = c0.clone(), want = c0.clone();
                    Bf16Gemm.gemm(false, false, m, n, k, ab[0], a, aOff, lda, b, 0, ldb, ab[1], got, 0, ldc);
                    Bf16Gemm.gemm(false, false, m, n, k, ab[0], Bf16.widen(a, 0, a.length), aOff, lda, Bf16.widen(b, 0, b.length),
                            0, ldb, ab[1], want, 0, ldc);
                    assertThat(got).as("%dx%dx%d lda=%d aOff=%d alpha=%s beta=%s threads=%d", m, n, k, lda, aOff, ab[0], ab[1], threads)
                            .isEqualTo(want);
                }
            }
        }
        Bf16Workspace ws = new Bf16Workspace();
        short[] any = new short[2];
        var rows = new Bf16Operands.InPlace(java.lang.foreign.MemorySegment.ofArray(any), 0, 512);
        assertThat(ws.inPlaceRows(rows, 150, 1024)).as("rows back to back: every whole panel in place").isEqualTo(144);
        assertThat(ws.inPlaceRows(rows, 11, 1024)).as("less than a panel").isZero();
        assertThat(ws.inPlaceRows(new Bf16Operands.InPlace(rows.seg(), 0, 1024), 150, 1024))
                .as("rows 4 KiB apart share their L1 sets: packed").isZero();
        assertThat(ws.inPlaceRows(null, 150, 1024)).as("a layout the kernel cannot read").isZero();
    }

    /**
     * A linear layer's forward, C = op(A) * op(B) + bias row, gives bitwise what copying the bias into every row and
     * adding the product into it (beta 1) gives: full tiles (the kernel adds the bias as it stores), ragged columns and
     * rows (through the tile buffer), several B panels per call (the kernel moves its bias pointer per panel), k over
     * two blocks (the bias only in the first), a bias at an offset, every transpose, and both two-thread splits.
     */
    @Test
    void aBiasRowAddedAsCIsStoredGivesTheBitsOfCopyingItIntoC() {
        int[][] shapes = {{24, 64, 40}, {1024, 384, 96}, {37, 1536, 70}, {61, 45, 1100}, {12, 300, 33}, {200, 31, 64},
                {5, 700, 20}};
        long seed = SEED + 13;
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            for (int[] s : shapes) {
                for (int t = 0; t < 4; t++) {
                    boolean tA = (t & 1) != 0, tB = (t & 2) != 0;
                    int m = s[0], n = s[1], k = s[2], lda = (tA ? m : k) + 1, ldb = (tB ? k : n) + 2, ldc = n + 5, biasOff = 3;
                    SplittableRandom rnd = new SplittableRandom(seed++);
                    float[] a = random(rnd, (tA ? k : m) * lda), b = random(rnd, (tB ? n : k) * ldb);
                    float[] bias = random(rnd, biasOff + n);
                    float[] got = random(rnd, m * ldc), want = got.clone();
                    for (int r = 0; r < m; r++) Arrays.fill(got, r * ldc, r * ldc + n, Float.NaN); // C is not read
                    Bf16Gemm.gemmWithBias(tA, tB, m, n, k, a, 0, lda, b, 0, ldb, bias, biasOff, got, 0, ldc);
                    for (int r = 0; r < m; r++) System.arraycopy(bias, biasOff, want, r * ldc, n);
                    Bf16Gemm.gemm(tA, tB, m, n, k, 1f, a, 0, lda, b, 0, ldb, 1f, want, 0, ldc);
                    assertThat(got).as("tA=%s tB=%s %dx%dx%d threads=%d", tA, tB, m, n, k, threads).isEqualTo(want);
                }
            }
        }
    }

    /** A NaN whose payload is only in the bits rounding drops must stay NaN (truncating rounding makes it infinite). */
    @Test
    void aNaNOperandGivesNaNNotInfinity() {
        for (boolean tA : new boolean[]{false, true}) {
            for (boolean tB : new boolean[]{false, true}) {
                int m = 30, n = 40, k = 70;
                float[] a = new float[m * k], b = new float[k * n], c = new float[m * n];
                Arrays.fill(a, 0.5f);
                Arrays.fill(b, 0.25f);
                a[tA ? 5 * m + 3 : 3 * k + 5] = Float.intBitsToFloat(0x7F80_0001); // A[3][5]
                b[tB ? 7 * k + 9 : 9 * n + 7] = Float.intBitsToFloat(0xFF80_0001); // B[9][7]
                Bf16Gemm.gemm(tA, tB, m, n, k, 1f, a, 0, tA ? m : k, b, 0, tB ? k : n, 0f, c, 0, n);
                String where = "tA=" + tA + " tB=" + tB;
                assertThat(c[3 * n + 11]).as("row of the NaN in A, " + where).isNaN();
                assertThat(c[20 * n + 7]).as("column of the NaN in B, " + where).isNaN();
                assertThat(c[20 * n + 11]).as("elsewhere, " + where).isEqualTo(70 * 0.125f);
            }
        }
    }

    @Test
    void theResultDoesNotDependOnTheThreadCount() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        int m = 203, n = 301, k = 777;
        float[] a = random(rnd, m * k), b = random(rnd, n * k);
        float[][] out = new float[2][m * n];
        for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            Bf16Gemm.gemm(false, true, m, n, k, 1f, a, 0, k, b, 0, k, 0f, out[threads - 1], 0, n);
        }
        assertThat(out[1]).isEqualTo(out[0]);
    }

    @Test
    void batchedProductsMatchOneByOne() {
        SplittableRandom rnd = new SplittableRandom(SEED + 1);
        int batch = 3, m = 50, n = 40, k = 64;
        float[] a = random(rnd, batch * m * k), b = random(rnd, batch * k * n);
        float[] c = new float[batch * m * n], one = new float[batch * m * n];
        Bf16Gemm.gemmBatched(false, false, batch, m, n, k, 1f, a, 0, k, (long) m * k, b, 0, n, (long) k * n,
                0f, c, 0, n, (long) m * n);
        for (int i = 0; i < batch; i++) {
            Bf16Gemm.gemm(false, false, m, n, k, 1f, a, i * m * k, k, b, i * k * n, n, 0f, one, i * m * n, n);
        }
        assertThat(c).isEqualTo(one);
    }

    @Test
    void badArgumentsAreRefusedNamingTheOperand() {
        float[] x = new float[10];
        assertThatThrownBy(() -> Bf16Gemm.gemm(false, false, 4, 4, 4, 1f, x, 0, 4, x, 0, 4, 0f, x, 0, 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("bf16 gemm: A (4 x 4");
        short[] h = new short[16];
        assertThatThrownBy(() -> Bf16Gemm.gemm(false, true, 4, 4, 4, 1f, h, 0, 4, h, 1, 4, 0f, new float[16], 0, 4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("bf16 gemm: B (4 x 4, ld=4, offset=1) needs 17 values");
        assertThatThrownBy(() -> Bf16Gemm.gemm(false, false, 4, -1, 4, 1f, h, 0, 4, h, 0, 4, 0f, new float[16], 0, 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("bf16 gemm: negative size m=4 n=-1 k=4");
        assertThatThrownBy(() -> Bf16Gemm.gemm(false, false, 4, 4, 4, 1f, h, 0, 3, h, 0, 4, 0f, new float[16], 0, 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("bf16 gemm: lda=3 < columns=4");
        float[] y = new float[64];
        assertThatThrownBy(() -> Bf16Gemm.gemmBatched(false, false, 2, 4, 4, 4, 1f, y, 0, 4, 16, y, 0, 4, 16, 0f, y, 0, 4, 64))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("bf16 gemmBatched: C (4 x 4");
    }
}
