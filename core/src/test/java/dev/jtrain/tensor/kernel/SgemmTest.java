package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.SgemmKernel.MR;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Checks {@link Sgemm} against its scalar double-accumulating {@link Sgemm#reference}.
 *
 * <p>Tolerance: |c - ref| <= 3e-5 * (|alpha| sum_p |a_ip b_pj| + |beta c0_ij|) + 1e-6. The kernel sums in
 * float with FMA, KC = 256 terms per block and the blocks added in sequence, so the worst-case rounding error
 * is about (256 + k/256) * 2^-24 ~ 2e-5 of that magnitude sum; a wrong index or a lost tile is off by O(1).
 */
@ExtendWith(RestoresKernelThreads.class)
class SgemmTest {
    private static final long SEED = 20261122L;
    private static final double REL_TOL = 3e-5;

    @BeforeEach
    void printSeed() {
        System.out.println("SgemmTest seed=" + SEED);
    }

    @ParameterizedTest(name = "threads={0}")
    @ValueSource(ints = {1, 2})
    void matchesReferenceOnOddShapesForAllTransposes(int threads) {
        Parallel.setThreads(threads);
        SplittableRandom rnd = new SplittableRandom(SEED + threads);
        int[][] shapes = {
            {1, 1, 1}, {1, 7, 3}, {7, 1, 5}, {1, 1000, 63}, {13, 33, 1}, {63, 65, 127}, {65, 63, 257},
            {127, 129, 65}, {12, 32, 256}, {25, 97, 300}, {1000, 17, 31}, {3, 1000, 77}, {200, 530, 520},
            {2100, 5, 3}, {13, 1000, 100}, {37, 70, 1100},
            {2, 1000, 300}, {4, 100, 50}, {5, 77, 40}, {40, 40, 40}, {9, 1100, 130}, {16, 600, 200}, {70, 75, 80},
            // k blocks of exactly KC (256) under several A panels and a ragged one: a packed panel filled to its end
            {40, 50, 256}, {61, 33, 512},
        };
        for (int[] s : shapes) {
            for (int t = 0; t < 4; t++) {
                check(rnd, (t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], 1f, 0f, 0, 0, 0, 0);
            }
        }
    }

    @ParameterizedTest(name = "threads={0}")
    @ValueSource(ints = {1, 2})
    void handlesOffsetsLeadingDimensionsAndAlphaBeta(int threads) {
        Parallel.setThreads(threads);
        SplittableRandom rnd = new SplittableRandom(SEED * 3 + threads);
        float[][] alphaBeta = {{1f, 0f}, {0.5f, 1f}, {-2f, 0.25f}, {1.5f, -1f}};
        int[][] shapes = {{5, 9, 11}, {37, 70, 45}, {130, 67, 300}, {64, 64, 64}};
        for (int[] s : shapes) {
            for (float[] ab : alphaBeta) {
                for (int t = 0; t < 4; t++) {
                    check(rnd, (t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], ab[0], ab[1], 3, 5, 7, 11);
                }
            }
        }
    }

    /**
     * An A stored m x k is read where it is (whole MR-row panels, rows lda apart) unless its stride would crowd the
     * panel into a few L1 sets; then it is packed. Both paths, with a ragged last panel, several k blocks, offsets and
     * both thread counts: a panel read from the wrong row, k block or offset is off by O(1).
     */
    @ParameterizedTest(name = "threads={0}")
    @ValueSource(ints = {1, 2})
    void readsARowsInPlaceOrPacksThemByTheirStride(int threads) {
        Parallel.setThreads(threads);
        SplittableRandom rnd = new SplittableRandom(SEED * 5 + threads);
        int[] rows = {MR, 4 * MR + 1, 150};
        for (int m : rows) {
            for (int[] kPad : new int[][] {{300, 11}, {300, 1024 - 300}, {600, 5}, {384, 0}, {256, 0}}) {
                for (int tb = 0; tb < 2; tb++) {
                    check(rnd, false, tb == 1, m, 70, kPad[0], 1f, 0f, 13, 3, 7, kPad[1]);
                    check(rnd, false, tb == 1, m, 45, kPad[0], 0.5f, 1f, 2, 0, 1, kPad[1]);
                }
            }
        }
        int[] sets = new int[64];
        assertThat(SgemmWorkspace.aPanelFitsL1(256, 256, sets)).as("rows back to back spread over the sets").isTrue();
        assertThat(SgemmWorkspace.aPanelFitsL1(256, 1024, sets)).as("a 4 KiB stride puts every row in the same sets").isFalse();
        assertThat(SgemmWorkspace.aPanelFitsL1(2048, 2048, sets)).as("a row longer than the sets").isFalse();
    }

    @Test
    void betaZeroOverwritesNaNAndAlphaZeroOnlyScales() {
        SplittableRandom rnd = new SplittableRandom(SEED + 7);
        int m = 29, n = 45, k = 33;
        float[] a = random(rnd, m * k), b = random(rnd, k * n);
        float[] c = new float[m * n];
        Arrays.fill(c, Float.NaN);
        Sgemm.sgemm(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, c, 0, n);
        for (float v : c) assertThat(v).isFinite();

        float[] c2 = random(rnd, m * n);
        float[] expected = c2.clone();
        for (int i = 0; i < expected.length; i++) expected[i] *= 0.5f;
        Sgemm.sgemm(false, false, m, n, k, 0f, a, 0, k, b, 0, n, 0.5f, c2, 0, n);
        assertThat(c2).containsExactly(expected);

        float[] c3 = new float[m * n];
        Arrays.fill(c3, Float.NaN);
        Sgemm.sgemm(false, false, m, n, 0, 1f, a, 0, k, b, 0, n, 0f, c3, 0, n);
        for (float v : c3) assertThat(v).isZero();
    }

    @ParameterizedTest(name = "threads={0}")
    @ValueSource(ints = {1, 2})
    void batchedMatchesPerMatrixReference(int threads) {
        Parallel.setThreads(threads);
        SplittableRandom rnd = new SplittableRandom(SEED * 5 + threads);
        // attention-like small problems (one whole GEMM per thread) and one large enough to be split inside
        int[][] shapes = {{6, 17, 19, 9}, {5, 64, 64, 16}, {2, 300, 200, 100}};
        for (int[] s : shapes) {
            for (int t = 0; t < 4; t++) {
                boolean ta = (t & 1) != 0, tb = (t & 2) != 0;
                int batch = s[0], m = s[1], n = s[2], k = s[3];
                int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
                long sa = (long) (ta ? k : m) * lda + 5, sb = (long) (tb ? n : k) * ldb + 1, sc = (long) m * ldc + 4;
                float[] a = random(rnd, (int) (2 + batch * sa)), b = random(rnd, (int) (3 + batch * sb));
                float[] c = random(rnd, (int) (4 + batch * sc));
                float[] expected = c.clone();
                for (int i = 0; i < batch; i++) {
                    Sgemm.reference(ta, tb, m, n, k, 0.75f, a, (int) (2 + i * sa), lda, b, (int) (3 + i * sb), ldb,
                            0.5f, expected, (int) (4 + i * sc), ldc);
                }
                float[] c0 = c.clone();
                Sgemm.sgemmBatched(ta, tb, batch, m, n, k, 0.75f, a, 2, lda, sa, b, 3, ldb, sb, 0.5f, c, 4, ldc, sc);
                for (int i = 0; i < batch; i++) {
                    assertClose(ta, tb, m, n, k, 0.75f, a, (int) (2 + i * sa), lda, b, (int) (3 + i * sb), ldb, 0.5f,
                            c0, c, expected, (int) (4 + i * sc), ldc, "batch entry " + i);
                }
            }
        }
    }

    /** All four micro-kernels, whichever this machine selected, on packed panels against a scalar loop. */
    @Test
    void allMicroKernelsMatchAScalarLoop() {
        SplittableRandom rnd = new SplittableRandom(SEED + 11);
        int nr = SgemmKernel.NR, kc = 37, stride = Sgemm.KC;
        for (int mr : new int[] {6, 12}) {
            for (boolean rowA : new boolean[] {false, true}) {
                float[] ap = random(rnd, 3 + mr * stride), bp = random(rnd, 5 + kc * nr), tile = new float[mr * nr];
                if (mr == 6 && rowA) SgemmMicroKernels.kernel6RowA(kc, ap, 3, bp, 5, tile);
                else if (mr == 6) SgemmMicroKernels.kernel6(kc, ap, 3, bp, 5, tile);
                else if (rowA) SgemmMicroKernels.kernel12RowA(kc, ap, 3, bp, 5, tile);
                else SgemmMicroKernels.kernel12(kc, ap, 3, bp, 5, tile);
                for (int r = 0; r < mr; r++) {
                    for (int j = 0; j < nr; j++) {
                        double ref = 0, mag = 0;
                        for (int p = 0; p < kc; p++) {
                            float av = rowA ? ap[3 + r * stride + p] : ap[3 + p * mr + r];
                            double t = (double) av * bp[5 + p * nr + j];
                            ref += t;
                            mag += Math.abs(t);
                        }
                        assertThat((double) tile[r * nr + j]).as("kernel%d rowA=%b r=%d j=%d", mr, rowA, r, j)
                                .isCloseTo(ref, org.assertj.core.data.Offset.offset(REL_TOL * mag + 1e-6));
                    }
                }
            }
        }
    }

    /** Data-parallel replicas and resumed runs must agree to the bit whatever their thread counts. */
    @Test
    void resultIsBitwiseIndependentOfThreadCount() {
        SplittableRandom rnd = new SplittableRandom(SEED + 17);
        int[][] shapes = {{300, 200, 600}, {1, 1000, 333}, {13, 1001, 257}, {100, 37, 300}, {129, 531, 70}};
        for (int[] s : shapes) {
            for (int t = 0; t < 4; t++) {
                boolean ta = (t & 1) != 0, tb = (t & 2) != 0;
                int m = s[0], n = s[1], k = s[2];
                float[] a = random(rnd, m * k), b = random(rnd, k * n);
                float[][] out = new float[3][];
                int[] threadCounts = {1, 2, 3};
                float[] c0 = random(rnd, m * n);
                for (int i = 0; i < threadCounts.length; i++) {
                    Parallel.setThreads(threadCounts[i]);
                    out[i] = c0.clone();
                    Sgemm.sgemm(ta, tb, m, n, k, 0.5f, a, 0, ta ? m : k, b, 0, tb ? k : n, 0.25f, out[i], 0, n);
                }
                assertThat(out[1]).as("2 threads vs 1, transA=%b transB=%b %s", ta, tb, Arrays.toString(s))
                        .isEqualTo(out[0]);
                assertThat(out[2]).as("3 threads vs 1, transA=%b transB=%b %s", ta, tb, Arrays.toString(s))
                        .isEqualTo(out[0]);
            }
        }
    }

    /** A resize of the pool while another thread multiplies must neither hang that thread nor corrupt C. */
    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void sgemmSurvivesThreadCountChangesFromAnotherThread() throws Exception {
        SplittableRandom rnd = new SplittableRandom(SEED + 13);
        int m = 40, n = 64, k = 420;  // above the parallel threshold, so every call opens a region
        float[] a = random(rnd, m * k), b = random(rnd, k * n), expected = new float[m * n];
        Sgemm.reference(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, expected, 0, n);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread worker = new Thread(() -> {
            float[] c = new float[m * n];
            try {
                while (!stop.get()) {
                    Sgemm.sgemm(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, c, 0, n);
                    for (int i = 0; i < c.length; i++) {
                        if (Math.abs(c[i] - expected[i]) > 1e-3) throw new AssertionError("C[" + i + "]=" + c[i]);
                    }
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "sgemm-while-resizing");
        worker.start();
        long end = System.nanoTime() + 1_500_000_000L;  // the old race hung within ~1 s of this churn
        for (int i = 0; System.nanoTime() < end && worker.isAlive(); i++) Parallel.setThreads(2 + i % 2);
        stop.set(true);
        worker.join(10_000);
        assertThat(worker.isAlive()).as("sgemm thread hung across pool resizes").isFalse();
        assertThat(failure.get()).isNull();
    }

    @Test
    void rejectsArraysTooSmallForTheirShape() {
        float[] a = new float[10 * 10], b = new float[10 * 10], c = new float[10 * 10];
        assertThatThrownBy(() -> Sgemm.sgemm(false, false, 10, 10, 11, 1f, a, 0, 11, b, 0, 10, 0f, c, 0, 10))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("sgemm: A (10 x 11");
        assertThatThrownBy(() -> Sgemm.sgemm(false, false, 10, 10, 10, 1f, a, 0, 10, b, 0, 9, 0f, c, 0, 10))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("sgemm: ldb=9");
        assertThatThrownBy(() -> Sgemm.sgemmBatched(false, false, 2, 10, 10, 10, 1f, a, 0, 10, 100,
                b, 0, 10, 0, 0f, c, 0, 10, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("sgemmBatched: A").hasMessageContaining("last batch shift=100");
    }

    /** Runs sgemm on a sub-matrix embedded with padding, and checks both the result and the untouched padding. */
    private static void check(SplittableRandom rnd, boolean ta, boolean tb, int m, int n, int k, float alpha,
                              float beta, int aOff, int bOff, int cOff, int ldPad) {
        int lda = (ta ? m : k) + ldPad, ldb = (tb ? k : n) + ldPad, ldc = n + ldPad;
        float[] a = random(rnd, aOff + (ta ? k : m) * lda);
        float[] b = random(rnd, bOff + (tb ? n : k) * ldb);
        float[] c = random(rnd, cOff + m * ldc + 3);
        if (beta == 0f) {
            for (int i = 0; i < m; i++) Arrays.fill(c, cOff + i * ldc, cOff + i * ldc + n, Float.NaN);
        }
        float[] c0 = c.clone();
        float[] expected = c.clone();
        Sgemm.reference(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, expected, cOff, ldc);
        Sgemm.sgemm(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
        assertClose(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c0, c, expected, cOff, ldc, "");
        // everything outside the m x n window (offset prefix, row padding, tail) must be untouched
        for (int idx = 0; idx < c.length; idx++) {
            int rel = idx - cOff;
            boolean inside = rel >= 0 && rel / ldc < m && rel % ldc < n;
            if (!inside && Float.floatToRawIntBits(c[idx]) != Float.floatToRawIntBits(c0[idx])) {
                throw new AssertionError("sgemm wrote outside C: index " + idx + " shape m=" + m + " n=" + n
                        + " ldc=" + ldc + " cOff=" + cOff);
            }
        }
    }

    private static void assertClose(boolean ta, boolean tb, int m, int n, int k, float alpha,
                                    float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta,
                                    float[] c0, float[] c, float[] expected, int cOff, int ldc, String where) {
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double mag = 0;
                for (int p = 0; p < k; p++) {
                    float av = ta ? a[aOff + p * lda + i] : a[aOff + i * lda + p];
                    float bv = tb ? b[bOff + j * ldb + p] : b[bOff + p * ldb + j];
                    mag += Math.abs((double) av * bv);
                }
                int ci = cOff + i * ldc + j;
                double tol = REL_TOL * (Math.abs(alpha) * mag + (beta == 0f ? 0 : Math.abs(beta * c0[ci]))) + 1e-6;
                if (!(Math.abs(c[ci] - expected[ci]) <= tol)) {
                    throw new AssertionError(String.format("%s transA=%b transB=%b m=%d n=%d k=%d alpha=%s beta=%s:"
                                    + " C[%d,%d]=%s expected %s (tol %.3g)", where, ta, tb, m, n, k, alpha, beta,
                            i, j, c[ci], expected[ci], tol));
                }
            }
        }
    }

    private static float[] random(SplittableRandom rnd, int len) {
        float[] x = new float[len];
        for (int i = 0; i < len; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }
}
