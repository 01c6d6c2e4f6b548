package dev.jtrain.tensor.kernel;

import java.util.Arrays;

/**
 * Argument validation and the trivial (k == 0 or alpha == 0) case of {@link Sgemm}, shared by the other GEMMs; every
 * message starts with the caller's operation ({@code op}: sgemm, bf16 gemm, ...). Stateless.
 */
final class SgemmArgs {
    private SgemmArgs() {}

    static void check(String op, boolean transA, boolean transB, int m, int n, int k, float[] a, int aOff, int lda,
                      float[] b, int bOff, int ldb, float[] c, int cOff, int ldc) {
        sizes(op, m, n, k);
        matrix(op, "A", transA ? k : m, transA ? m : k, a, aOff, lda, 0);
        matrix(op, "B", transB ? n : k, transB ? k : n, b, bOff, ldb, 0);
        matrix(op, "C", m, n, c, cOff, ldc, 0);
    }

    static void sizes(String op, int m, int n, int k) {
        if (m < 0 || n < 0 || k < 0) throw new IllegalArgumentException(op + ": negative size m=" + m + " n=" + n + " k=" + k);
    }

    static void checkBatch(String op, boolean transA, boolean transB, int batch, int m, int n, int k,
                           float[] a, int aOff, int lda, long strideA, float[] b, int bOff, int ldb, long strideB,
                           float[] c, int cOff, int ldc, long strideC) {
        sizes(op, m, n, k);
        matrix(op, "A", transA ? k : m, transA ? m : k, a, aOff, lda, (batch - 1) * strideA);
        matrix(op, "B", transB ? n : k, transB ? k : n, b, bOff, ldb, (batch - 1) * strideB);
        matrix(op, "C", m, n, c, cOff, ldc, (batch - 1) * strideC);
        if (strideA < 0 || strideB < 0 || strideC < 0) {
            throw new IllegalArgumentException(op + ": strides must be >= 0, got strideA=" + strideA
                    + " strideB=" + strideB + " strideC=" + strideC);
        }
    }

    /** Checks that a rows x cols row-major matrix at off (plus lastShift for the last batch entry) fits. */
    static void matrix(String op, String name, int rows, int cols, float[] x, int off, int ld, long lastShift) {
        if (x == null) throw new IllegalArgumentException(op + ": array " + name + " is null");
        matrix(op, name, rows, cols, x.length, off, ld, lastShift);
    }

    /** {@link #matrix} for a matrix of bf16 values held in a {@code short[]}. */
    static void matrix(String op, String name, int rows, int cols, short[] x, int off, int ld) {
        if (x == null) throw new IllegalArgumentException(op + ": array " + name + " is null");
        matrix(op, name, rows, cols, x.length, off, ld, 0);
    }

    private static void matrix(String op, String name, int rows, int cols, int length, int off, int ld, long lastShift) {
        if (ld < Math.max(1, cols)) {
            throw new IllegalArgumentException(op + ": ld" + name.toLowerCase() + "=" + ld + " < columns=" + cols
                    + " of stored " + name + " (" + rows + " x " + cols + ")");
        }
        if (off < 0) throw new IllegalArgumentException(op + ": offset of " + name + " is negative: " + off);
        if (rows == 0 || cols == 0) return;
        long end = off + lastShift + (long) (rows - 1) * ld + cols;
        if (end > length) {
            throw new IllegalArgumentException(op + ": " + name + " (" + rows + " x " + cols + ", ld=" + ld
                    + ", offset=" + off + (lastShift != 0 ? ", last batch shift=" + lastShift : "")
                    + ") needs " + end + " values but the array holds " + length);
        }
    }

    /** C = beta * C (beta == 0 writes zeros without reading C). */
    static void scale(int m, int n, float beta, float[] c, int cOff, int ldc) {
        for (int i = 0; i < m; i++) {
            int row = cOff + i * ldc;
            if (beta == 0f) Arrays.fill(c, row, row + n, 0f);
            else if (beta != 1f) for (int j = row; j < row + n; j++) c[j] *= beta;
        }
    }
}
