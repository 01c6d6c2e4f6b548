package dev.jtrain.tensor.kernel;

/**
 * Single-precision GEMM on row-major float arrays: {@code C = alpha * op(A) * op(B) + beta * C}, where
 * op(A) is m x k and op(B) is k x n. {@code transA} means A is stored k x m (so op(A) = A^T), likewise B.
 *
 * <p>PLACEHOLDER: the optimised, packed, register-tiled Vector API kernel is being written; this delegates
 * to the scalar reference so that the rest of the system can be built against the final signature.
 */
public final class Sgemm {
    private Sgemm() {}

    public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                             float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                             float beta, float[] c, int cOff, int ldc) {
        reference(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
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
