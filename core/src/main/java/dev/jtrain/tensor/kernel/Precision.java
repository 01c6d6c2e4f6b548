package dev.jtrain.tensor.kernel;

import java.util.Locale;

/**
 * The arithmetic a matmul runs in. {@code FP32} is {@link Sgemm}; {@code BF16} is {@link Bf16Gemm}: operands
 * rounded to bf16, products summed in fp32, the result in fp32 (what autocast does to a matmul).
 */
public enum Precision {
    FP32, BF16;

    /** {@code fp32} or {@code bf16}, any case. */
    public static Precision parse(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "fp32", "float32" -> FP32;
            case "bf16", "bfloat16" -> BF16;
            default -> throw new IllegalArgumentException("precision must be fp32 or bf16, got '" + name + "'");
        };
    }

    /** The name users type: {@code fp32} or {@code bf16}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** {@code C = alpha * op(A) * op(B) + beta * C} in this precision (arguments as {@link Sgemm#sgemm}). */
    public void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
                     float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
        if (this == BF16) Bf16Gemm.gemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
        else Sgemm.sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    /**
     * {@code C = op(A) * op(B) + bias}, the row vector {@code bias[biasOff + j]} added to column j of every row (a
     * linear layer's forward): bitwise the bias copied into each row of C and {@link #gemm} with beta 1, which bf16
     * on the AVX512_BF16 kernel does without the copy ({@link Bf16Gemm#gemmWithBias}).
     */
    public void gemmWithBias(boolean transA, boolean transB, int m, int n, int k, float[] a, int aOff, int lda,
                             float[] b, int bOff, int ldb, float[] bias, int biasOff, float[] c, int cOff, int ldc) {
        if (this == BF16) {
            Bf16Gemm.gemmWithBias(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, bias, biasOff, c, cOff, ldc);
            return;
        }
        SgemmArgs.matrix("sgemm with bias", "bias", 1, n, bias, biasOff, Math.max(1, n), 0);
        SgemmArgs.matrix("sgemm with bias", "C", m, n, c, cOff, ldc, 0);
        for (int r = 0; r < m; r++) System.arraycopy(bias, biasOff, c, cOff + r * ldc, n);
        Sgemm.sgemm(transA, transB, m, n, k, 1f, a, aOff, lda, b, bOff, ldb, 1f, c, cOff, ldc);
    }

    /** {@code batch} independent products in this precision (arguments as {@link Sgemm#sgemmBatched}). */
    public void gemmBatched(boolean transA, boolean transB, int batch, int m, int n, int k, float alpha,
                            float[] a, int aOff, int lda, long strideA, float[] b, int bOff, int ldb, long strideB,
                            float beta, float[] c, int cOff, int ldc, long strideC) {
        if (this == BF16) {
            Bf16Gemm.gemmBatched(transA, transB, batch, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                    beta, c, cOff, ldc, strideC);
        } else {
            Sgemm.sgemmBatched(transA, transB, batch, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                    beta, c, cOff, ldc, strideC);
        }
    }

    /**
     * Bound on |computed - exact| for one entry, relative to {@code sum |a_ip b_pj|} over {@code k} terms: fp32
     * summation in blocks, plus for bf16 the rounding of both factors (2 * 2^-8).
     */
    public double relativeErrorBound(int k) {
        double summation = 1e-5 + k * 0x1p-24;
        return this == BF16 ? 2 * Bf16.UNIT_ROUNDOFF + summation : summation;
    }
}
