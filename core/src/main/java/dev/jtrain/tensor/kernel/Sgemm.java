package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.SgemmKernel.MR;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;

/**
 * Single-precision GEMM on row-major float arrays: {@code C = alpha * op(A) * op(B) + beta * C}, where
 * op(A) is m x k and op(B) is k x n. {@code transA} means A is stored k x m (so op(A) = A^T), likewise B.
 * {@code beta == 0} never reads C (NaN in C is overwritten), as in BLAS.
 *
 * <p>Algorithm: Goto &amp; van de Geijn 2008 / BLIS (Van Zee &amp; van de Geijn 2015) five-loop blocking around a
 * register-tiled micro-kernel ({@link SgemmKernel}), with operands packed by {@link SgemmPack}:
 * <pre>
 * for pc in k step KC                      // rank-KC updates; beta applied on the first only
 *   for ic in m step MC:  pack A[ic, pc] -&gt; Ap   (MC x KC, L3-resident)
 *     for jc in n step NC:  pack B[pc, jc] -&gt; Bp (KC x NC = 512 KiB, L2-resident)
 *       for ir in MC step MR                // A micro-panel MR x KC = 12 KiB stays in L1
 *         for jr in NC step NR              // B micro-panels streamed from L2
 *           micro-kernel MR x NR, write back alpha/beta
 * </pre>
 * With the machine-code kernel an A stored m x k is not packed: its rows are already contiguous in k, and the kernel
 * reads whole MR-row panels where they are (rows lda apart) unless that stride would crowd them into a few L1 sets
 * ({@link SgemmWorkspace}); B is always packed.
 * Flat problems (m &lt;= {@link #SMALL_M}, a decode step) and tiny ones skip packing: {@link SgemmSmall}.
 * Multithreading splits C into one rectangle per thread on the persistent {@link Parallel} pool, each thread
 * packing into its own reused buffers (no allocation per call once warm).
 *
 * <p>Reproducibility: the result is bitwise independent of the thread count and of the JIT tier. Every element
 * of C is summed over k in the same order (one FMA per k step, KC blocks in sequence) whichever thread or tile
 * computes it, threads only split C, and the path (packed or {@link SgemmSmall}) depends on the shape alone.
 *
 * <p>Threading: may be called from any thread; calls from inside a {@link Parallel} region run serially.
 */
public final class Sgemm {
    /**
     * Depth of a rank-k update. The A micro-panel (MR x KC x 4 B = 12 KiB for MR=12) must stay in the
     * 32 KiB L1d (Zen 4, lscpu) while B micro-panels stream past it. Every rank-KC update reads and writes all
     * of C once, which argues for a larger KC; KC = 512 with NC = 256 was tried, but on the shared development VM
     * alternating runs went from somewhat faster to equal, within that machine's noise, so 256 stays until measured
     * on a quiet machine (bench/MEASUREMENTS.md, "SGEMM block depth").
     */
    static final int KC = 256;
    /** Width of a packed B block: KC x NC x 4 B = 512 KiB, half of the 1 MiB per-core L2 (Zen 4, lscpu). */
    static final int NC = 512;
    /** Rows of a packed A block, kept in the (32 MiB, shared) L3: 2040 x KC x 4 B = 2 MiB per thread. */
    static final int MC = 2048 / MR * MR;

    /**
     * Problems with at most this many rows skip packing ({@link SgemmSmall}): packing B costs k * n loads and
     * stores, as much as the m * k * n FMAs when m is a few rows, and an MR = 12 tile would be mostly padding
     * (figures: bench/MEASUREMENTS.md, "unpacked SGEMM").
     */
    static final int SMALL_M = KernelOptions.CURRENT.smallM();
    /**
     * Problems with m * n * k at most this and B not transposed skip packing too: below it the packing copies cost
     * more than they save, and the two break even around 96^3 (bench/MEASUREMENTS.md, "unpacked SGEMM"). With B
     * transposed the unpacked form is dot products, whose horizontal sums make it slower than packing at any size.
     */
    static final long SMALL_VOLUME = KernelOptions.CURRENT.smallVolume();

    private static final ThreadLocal<SgemmWorkspace> WORKSPACE = ThreadLocal.withInitial(SgemmWorkspace::new);

    private Sgemm() {}

    public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                             float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                             float beta, float[] c, int cOff, int ldc) {
        SgemmArgs.check("sgemm", transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
        if (m == 0 || n == 0) return;
        if (k == 0 || alpha == 0f) {
            SgemmArgs.scale(m, n, beta, c, cOff, ldc);
            return;
        }
        int threads = Parallel.threads();
        long volume = (long) m * n * k;
        if (m <= SMALL_M || (volume <= SMALL_VOLUME && !transB)) {
            smallGemm(threads, transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            return;
        }
        // Below ~2 Mflop a parallel region (a few microseconds) and redundant packing cost more than they save.
        if (threads == 1 || volume < 1L << 20) {
            WORKSPACE.get().gemm(transA, transB, 0, m, 0, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            return;
        }
        // Split C into tm x tn rectangles, preferring rows: each thread then packs only its own rows of A
        // and all of B (B packing is a plain vector copy when !transB).
        int tm = Math.min(threads, Math.max(1, m / (2 * MR)));
        while (threads % tm != 0) tm--;
        int tn = Math.min(threads / tm, Math.max(1, n / NR));
        GemmBatches.rectangles(m, n, tm, tn, MR, NR, (i0, i1, j0, j1) -> WORKSPACE.get()
                .gemm(transA, transB, i0, i1, j0, j1, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc));
    }

    /** Splits the unpacked path over column ranges of C (rows are too few to share out). */
    private static void smallGemm(int threads, boolean transA, boolean transB, int m, int n, int k, float alpha,
                                  float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                                  float beta, float[] c, int cOff, int ldc) {
        int parts = (long) m * n * k < 1L << 18 ? 1 : Math.min(threads, Math.max(1, n / (4 * NR)));
        if (parts <= 1) {
            SgemmWorkspace ws = WORKSPACE.get();
            SgemmSmall.gemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc,
                    ws.row(Math.max(k, n)), ws.tile());
            return;
        }
        Parallel.forRange(parts, 1, (lo, hi) -> {
            SgemmWorkspace ws = WORKSPACE.get();
            for (int t = lo; t < hi; t++) {
                int j0 = GemmBatches.split(n, parts, t, NR), j1 = GemmBatches.split(n, parts, t + 1, NR);
                if (j0 >= j1) continue;
                SgemmSmall.gemm(transA, transB, m, j1 - j0, k, alpha, a, aOff, lda,
                        b, transB ? bOff + j0 * ldb : bOff + j0, ldb, beta, c, cOff + j0, ldc,
                        ws.row(Math.max(k, n)), ws.tile());
            }
        });
    }

    /**
     * {@code batch} independent GEMMs; matrix {@code i} of A starts at {@code aOff + i * strideA} (likewise
     * B, C). Small matrices (attention heads: 256 x 256 x 64) run one whole GEMM per thread; large ones are
     * each split across the threads.
     */
    public static void sgemmBatched(boolean transA, boolean transB, int batch, int m, int n, int k, float alpha,
                                    float[] a, int aOff, int lda, long strideA,
                                    float[] b, int bOff, int ldb, long strideB,
                                    float beta, float[] c, int cOff, int ldc, long strideC) {
        GemmBatches.run("sgemmBatched", Sgemm::sgemm, transA, transB, batch, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                beta, c, cOff, ldc, strideC);
    }

    /** One line saying which micro-kernel fp32 products run on here (and why not the machine code, where it could). */
    public static String backend() {
        return SgemmKernel.backend();
    }

    /** Plain triple loop, accumulating in double; the oracle every optimised path is tested against. */
    public static void reference(boolean transA, boolean transB, int m, int n, int k, float alpha,
                                 float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                                 float beta, float[] c, int cOff, int ldc) {
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    float av = transA ? a[aOff + p * lda + i] : a[aOff + i * lda + p];
                    float bv = transB ? b[bOff + j * ldb + p] : b[bOff + p * ldb + j];
                    s += (double) av * bv;
                }
                int ci = cOff + i * ldc + j;
                c[ci] = (float) (alpha * s + (beta == 0f ? 0.0 : (double) beta * c[ci]));
            }
        }
    }
}
