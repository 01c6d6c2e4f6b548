package dev.jtrain.tensor.kernel;

/**
 * bf16 matmuls where the bf16 kernel cannot run (a CPU without AVX512_BF16, or {@code jtrain.bf16.kernel=fp32}): the
 * operands rounded to bf16 exactly as the kernel's packing rounds them, multiplied by {@link Sgemm} in fp32. The
 * values are a bf16 machine's up to the order of the fp32 sums, so a bf16 run trains the same model on any CPU; only
 * the speed is fp32's ({@link Bf16Gemm#backend} says so).
 *
 * <p>Threading: any thread; the rounding scratch is per thread.
 */
final class Bf16Fallback {
    /** Depth and width of the operand blocks rounded at a time (about 4 MiB of B, whatever the shape). */
    private static final int ROUND_KC = 512, ROUND_NC = 2048;
    /** Floats per parallel chunk of rounding: at least 64K, so splitting pays for the hand-off. */
    private static final int ROUND_GRAIN = 65536;
    private static final ThreadLocal<float[][]> ROUNDED = ThreadLocal.withInitial(() -> new float[][]{new float[0], new float[0]});

    private Bf16Fallback() {}

    /**
     * C = alpha * round(op(A)) * round(op(B)) + beta * C, block by block over k (and over n for B), each block's
     * operands rounded to bf16 into scratch and multiplied by SGEMM, which adds into C from the second k block on. The rounding is {@link Bf16#round}, the packing's; the result depends on neither the thread count nor the
     * blocking along n, and for k up to a block it is SGEMM's on the rounded operands, bit for bit.
     */
    static void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
                     float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
        float[][] scratch = ROUNDED.get();
        for (int pc = 0; pc < k; pc += ROUND_KC) {
            int kc = Math.min(ROUND_KC, k - pc);
            if (scratch[0].length < m * kc) scratch[0] = new float[m * kc];
            float[] ra = scratch[0]; // op(A)'s columns pc..pc+kc, stored as A is (m x kc, or kc x m when transposed)
            if (transA) roundRows(a, aOff + pc * lda, lda, kc, m, ra);
            else roundRows(a, aOff + pc, lda, m, kc, ra);
            float betaPc = pc == 0 ? beta : 1f;
            for (int jc = 0; jc < n; jc += ROUND_NC) {
                int nc = Math.min(ROUND_NC, n - jc);
                if (scratch[1].length < kc * nc) scratch[1] = new float[kc * nc];
                float[] rb = scratch[1]; // op(B)'s rows pc..pc+kc and columns jc..jc+nc, stored as B is
                if (transB) roundRows(b, bOff + jc * ldb + pc, ldb, nc, kc, rb);
                else roundRows(b, bOff + pc * ldb + jc, ldb, kc, nc, rb);
                Sgemm.sgemm(transA, transB, m, nc, kc, alpha, ra, 0, transA ? m : kc, rb, 0, transB ? kc : nc, betaPc,
                        c, cOff + jc, ldc);
            }
        }
    }

    /**
     * {@code rows x cols} values from {@code src} (row stride {@code ld}), rounded to bf16, densely into {@code dst}:
     * vector by vector ({@link Bf16#roundInto}), rows split over the kernel threads, so this one pass over each
     * operand costs a memory copy's time beside the product's k-fold reuse of it (bench/MEASUREMENTS.md, session 42).
     */
    private static void roundRows(float[] src, int off, int ld, int rows, int cols, float[] dst) {
        Parallel.forRange(rows, Math.max(1, ROUND_GRAIN / cols), (lo, hi) -> {
            for (int r = lo; r < hi; r++) Bf16.roundInto(src, off + r * ld, dst, r * cols, cols);
        });
    }
}
