package dev.jtrain.tensor.kernel;

/**
 * What {@link Sgemm} and {@link Bf16Gemm} share around their products: how C is cut into rectangles between threads,
 * and how a batch of independent products is spread over them.
 *
 * <p>Threading: stateless.
 */
final class GemmBatches {
    /** One product, {@code C = alpha * op(A) * op(B) + beta * C}, with {@link Sgemm#sgemm}'s arguments. */
    @FunctionalInterface
    interface Product {
        void run(boolean transA, boolean transB, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
                 float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc);
    }

    /** The part of C one thread computes: rows [i0, i1), columns [j0, j1). */
    @FunctionalInterface
    interface Rectangle {
        void run(int i0, int i1, int j0, int j1);
    }

    private GemmBatches() {}

    /**
     * Cuts m x n into tm x tn rectangles (edges on multiples of {@code mr} rows and {@code nr} columns) and runs
     * {@code body} on each non-empty one, one per thread of the {@link Parallel} pool.
     */
    static void rectangles(int m, int n, int tm, int tn, int mr, int nr, Rectangle body) {
        Parallel.forRange(tm * tn, 1, (lo, hi) -> {
            for (int t = lo; t < hi; t++) {
                int ti = t / tn, tj = t % tn;
                int i0 = split(m, tm, ti, mr), i1 = split(m, tm, ti + 1, mr);
                int j0 = split(n, tn, tj, nr), j1 = split(n, tn, tj + 1, nr);
                if (i0 < i1 && j0 < j1) body.run(i0, i1, j0, j1);
            }
        });
    }

    /**
     * {@code batch} independent products; matrix {@code i} of A starts at {@code aOff + i * strideA} (likewise B, C).
     * Small ones (attention heads: 256 x 256 x 64) run one whole product per thread: one of them on one core is
     * already enough work to pay for a parallel region of its own (bench/MEASUREMENTS.md, "batched products"); large
     * ones are each split across the threads.
     */
    static void run(String who, Product product, boolean transA, boolean transB, int batch, int m, int n, int k,
                    float alpha, float[] a, int aOff, int lda, long strideA, float[] b, int bOff, int ldb, long strideB,
                    float beta, float[] c, int cOff, int ldc, long strideC) {
        if (batch < 0) throw new IllegalArgumentException(who + ": batch must be >= 0, got batch=" + batch);
        if (batch == 0) return;
        SgemmArgs.checkBatch(who, transA, transB, batch, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                c, cOff, ldc, strideC);
        long flops = 2L * m * n * k;
        if (Parallel.threads() > 1 && batch >= 2 && flops < (1L << 23)) {
            Parallel.forRange(batch, 1, (lo, hi) -> {
                for (int i = lo; i < hi; i++) {
                    product.run(transA, transB, m, n, k, alpha, a, (int) (aOff + i * strideA), lda,
                            b, (int) (bOff + i * strideB), ldb, beta, c, (int) (cOff + i * strideC), ldc);
                }
            });
        } else {
            for (int i = 0; i < batch; i++) {
                product.run(transA, transB, m, n, k, alpha, a, (int) (aOff + i * strideA), lda,
                        b, (int) (bOff + i * strideB), ldb, beta, c, (int) (cOff + i * strideC), ldc);
            }
        }
    }

    /** Boundary {@code part} of [0, len) cut into {@code parts} pieces, rounded to multiples of {@code unit}. */
    static int split(int len, int parts, int part, int unit) {
        if (part >= parts) return len;
        long units = (len + unit - 1) / unit;
        return (int) Math.min(len, units * part / parts * unit);
    }

    /**
     * The step that cuts {@code span} into equal blocks of at most {@code max} (a multiple of {@code unit}), each a
     * whole number of units: k = 1088 with KC 256 gives 5 blocks of 218, not 4 x 256 + 64, whose short last block
     * would pay a full pass over C for few multiply-adds; rows just past a block size make two equal blocks, not a
     * block and a sliver that packs all of B again. The workspaces' k, m and n loops all step this way.
     */
    static int equalSteps(int span, int max, int unit) {
        int blocks = Math.max(1, (span + max - 1) / max);
        return ((span + blocks - 1) / blocks + unit - 1) / unit * unit;
    }
}
