package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

import static dev.jtrain.tensor.kernel.SgemmKernel.L;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;
import static dev.jtrain.tensor.kernel.SgemmKernel.S;

/**
 * Unpacked SGEMM for problems too small, or too flat (a few rows of A: the decode step of a language model),
 * for packing to pay off: packing touches k * n floats of B, as much as the whole product when m = 1.
 * Reads A and B where they lie, so each path is chosen by which operand is contiguous along what:
 * <ul>
 *   <li>B not transposed (row p of B contiguous along n): rows of C as sums of scaled rows of B
 *       (axpy form), four rows of C at a time so each B vector loaded feeds four FMAs;</li>
 *   <li>B transposed (row j of B contiguous along k): dot products of a row of A with four rows of B.</li>
 * </ul>
 * Threading: stateless apart from the caller's scratch row; single-threaded.
 */
final class SgemmSmall {
    private SgemmSmall() {}

    /**
     * Same contract as {@link Sgemm#sgemm}; {@code scratch} must hold max(k, n) floats,
     * {@code tile} MR * NR floats.
     */
    static void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                     float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                     float beta, float[] c, int cOff, int ldc, float[] scratch, float[] tile) {
        // op(A)(i, p) = a[aOff + i * ars + p * aps]
        int ars = transA ? 1 : lda, aps = transA ? lda : 1;
        if (!transB) {
            int i = 0;
            for (; i + 4 <= m; i += 4) rows4(i, n, k, alpha, a, aOff, ars, aps, b, bOff, ldb, beta, c, cOff, ldc, tile);
            for (; i < m; i++) row1(i, n, k, alpha, a, aOff, ars, aps, b, bOff, ldb, beta, c, cOff, ldc, scratch);
        } else {
            for (int i = 0; i < m; i++) {
                float[] arow = a;
                int arowOff = aOff + i * ars;
                if (transA) {  // column i of the stored A is strided: gather it once
                    for (int p = 0; p < k; p++) scratch[p] = a[arowOff + p * aps];
                    arow = scratch;
                    arowOff = 0;
                }
                dots(arow, arowOff, n, k, alpha, b, bOff, ldb, beta, c, cOff + i * ldc);
            }
        }
    }

    /**
     * C[i:i+4, :] from four rows of op(A) and unit-stride rows of B, NR = 2 vectors of columns at a time. The
     * accumulators go through {@code tile} rather than a helper taking vectors: a helper that C2 declines to
     * inline would box every vector.
     */
    private static void rows4(int i, int n, int k, float alpha, float[] a, int aOff, int ars, int aps,
                              float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc, float[] tile) {
        int a0 = aOff + i * ars, a1 = a0 + ars, a2 = a1 + ars, a3 = a2 + ars;
        for (int j = 0; j < n; j += NR) {
            FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S), c10 = FloatVector.zero(S);
            FloatVector c11 = FloatVector.zero(S), c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
            FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
            VectorMask<Float> m0 = S.indexInRange(j, n), m1 = S.indexInRange(j + L, n);
            boolean full = j + NR <= n;
            for (int p = 0, bi = bOff + j, ap = 0; p < k; p++, bi += ldb, ap += aps) {
                FloatVector b0 = full ? FloatVector.fromArray(S, b, bi) : FloatVector.fromArray(S, b, bi, m0);
                FloatVector b1 = full ? FloatVector.fromArray(S, b, bi + L) : FloatVector.fromArray(S, b, bi + L, m1);
                FloatVector v = FloatVector.broadcast(S, a[a0 + ap]);
                c00 = v.fma(b0, c00);
                c01 = v.fma(b1, c01);
                v = FloatVector.broadcast(S, a[a1 + ap]);
                c10 = v.fma(b0, c10);
                c11 = v.fma(b1, c11);
                v = FloatVector.broadcast(S, a[a2 + ap]);
                c20 = v.fma(b0, c20);
                c21 = v.fma(b1, c21);
                v = FloatVector.broadcast(S, a[a3 + ap]);
                c30 = v.fma(b0, c30);
                c31 = v.fma(b1, c31);
            }
            c00.intoArray(tile, 0);
            c01.intoArray(tile, L);
            c10.intoArray(tile, NR);
            c11.intoArray(tile, NR + L);
            c20.intoArray(tile, 2 * NR);
            c21.intoArray(tile, 2 * NR + L);
            c30.intoArray(tile, 3 * NR);
            c31.intoArray(tile, 3 * NR + L);
            SgemmKernel.writeBack(tile, c, cOff + i * ldc + j, ldc, alpha, beta, 4, Math.min(NR, n - j));
        }
    }

    /**
     * C[i, :] from one row of op(A) (a vector-matrix product): walks B row by row, the order it lies in memory,
     * accumulating into {@code acc} (n floats, L1-resident for the sizes this path takes), four rows of B per
     * pass to cut the loads and stores of {@code acc}.
     */
    private static void row1(int i, int n, int k, float alpha, float[] a, int aOff, int ars, int aps,
                             float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc, float[] acc) {
        Arrays.fill(acc, 0, n, 0f);
        int a0 = aOff + i * ars;
        int nv = n - n % L;
        int p = 0;
        for (; p + 4 <= k; p += 4) {
            int ap = a0 + p * aps;
            FloatVector v0 = FloatVector.broadcast(S, a[ap]), v1 = FloatVector.broadcast(S, a[ap + aps]);
            FloatVector v2 = FloatVector.broadcast(S, a[ap + 2 * aps]), v3 = FloatVector.broadcast(S, a[ap + 3 * aps]);
            int b0 = bOff + p * ldb, b1 = b0 + ldb, b2 = b1 + ldb, b3 = b2 + ldb;
            for (int j = 0; j < nv; j += L) {
                FloatVector t = FloatVector.fromArray(S, acc, j);
                t = v0.fma(FloatVector.fromArray(S, b, b0 + j), t);
                t = v1.fma(FloatVector.fromArray(S, b, b1 + j), t);
                t = v2.fma(FloatVector.fromArray(S, b, b2 + j), t);
                t = v3.fma(FloatVector.fromArray(S, b, b3 + j), t);
                t.intoArray(acc, j);
            }
            float s0 = a[ap], s1 = a[ap + aps], s2 = a[ap + 2 * aps], s3 = a[ap + 3 * aps];
            for (int j = nv; j < n; j++) {  // same FMA chain as the vector lanes, so every column rounds alike
                float t = Math.fma(s0, b[b0 + j], acc[j]);
                t = Math.fma(s1, b[b1 + j], t);
                t = Math.fma(s2, b[b2 + j], t);
                acc[j] = Math.fma(s3, b[b3 + j], t);
            }
        }
        for (; p < k; p++) {
            float s0 = a[a0 + p * aps];
            int b0 = bOff + p * ldb;
            for (int j = 0; j < n; j++) acc[j] = Math.fma(s0, b[b0 + j], acc[j]);
        }
        int ci = cOff + i * ldc;
        for (int j = 0; j < n; j++) c[ci + j] = beta == 0f ? alpha * acc[j] : alpha * acc[j] + beta * c[ci + j];
    }

    /** C[row, j] = alpha * dot(arow, B row j) + beta * C[row, j], four rows of B per pass. */
    private static void dots(float[] arow, int arowOff, int n, int k, float alpha,
                             float[] b, int bOff, int ldb, float beta, float[] c, int crow) {
        int kv = k - k % L;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            int b0 = bOff + j * ldb, b1 = b0 + ldb, b2 = b1 + ldb, b3 = b2 + ldb;
            FloatVector s0 = FloatVector.zero(S), s1 = FloatVector.zero(S);
            FloatVector s2 = FloatVector.zero(S), s3 = FloatVector.zero(S);
            for (int p = 0; p < kv; p += L) {
                FloatVector av = FloatVector.fromArray(S, arow, arowOff + p);
                s0 = av.fma(FloatVector.fromArray(S, b, b0 + p), s0);
                s1 = av.fma(FloatVector.fromArray(S, b, b1 + p), s1);
                s2 = av.fma(FloatVector.fromArray(S, b, b2 + p), s2);
                s3 = av.fma(FloatVector.fromArray(S, b, b3 + p), s3);
            }
            float d0 = VectorMath.sum(s0), d1 = VectorMath.sum(s1);
            float d2 = VectorMath.sum(s2), d3 = VectorMath.sum(s3);
            for (int p = kv; p < k; p++) {
                float av = arow[arowOff + p];
                d0 += av * b[b0 + p];
                d1 += av * b[b1 + p];
                d2 += av * b[b2 + p];
                d3 += av * b[b3 + p];
            }
            put(c, crow + j, d0, alpha, beta);
            put(c, crow + j + 1, d1, alpha, beta);
            put(c, crow + j + 2, d2, alpha, beta);
            put(c, crow + j + 3, d3, alpha, beta);
        }
        for (; j < n; j++) {
            int b0 = bOff + j * ldb;
            FloatVector s0 = FloatVector.zero(S);
            for (int p = 0; p < kv; p += L) {
                s0 = FloatVector.fromArray(S, arow, arowOff + p).fma(FloatVector.fromArray(S, b, b0 + p), s0);
            }
            float d0 = VectorMath.sum(s0);
            for (int p = kv; p < k; p++) d0 += arow[arowOff + p] * b[b0 + p];
            put(c, crow + j, d0, alpha, beta);
        }
    }

    private static void put(float[] c, int ci, float dot, float alpha, float beta) {
        c[ci] = beta == 0f ? alpha * dot : alpha * dot + beta * c[ci];
    }
}
