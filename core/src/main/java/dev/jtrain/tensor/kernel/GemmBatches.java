package dev.jtrain.tensor.kernel;

/**
 * What {@link Sgemm} and {@link Bf16Gemm} share around their products: how C is cut between threads, and how a batch
 * of independent products is spread over them.
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

    private GemmBatches() {}

    /**
     * {@code batch} independent products; matrix {@code i} of A starts at {@code aOff + i * strideA} (likewise B, C).
     * Small ones (attention heads: 256 x 256 x 64) run one whole product per thread, since 8 Mflop take ~100 us on
     * one core, enough for a parallel region of their own; large ones are each split across the threads.
     */
    static void run(String who, Product product, boolean transA, boolean transB, int batch, int m, int n, int k,
                    float alpha, float[] a, int aOff, int lda, long strideA, float[] b, int bOff, int ldb, long strideB,
                    float beta, float[] c, int cOff, int ldc, long strideC) {
        if (batch < 0) throw new IllegalArgumentException(who + ": batch must be >= 0, got batch=" + batch);
        if (batch == 0) return;
        SgemmArgs.checkBatch(transA, transB, batch, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB,
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
}
