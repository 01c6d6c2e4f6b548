package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Sgemm.KC;
import static dev.jtrain.tensor.kernel.SgemmKernel.L;
import static dev.jtrain.tensor.kernel.SgemmKernel.MR;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;
import static dev.jtrain.tensor.kernel.SgemmKernel.S;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;

/**
 * Packs blocks of op(A) and op(B) into the contiguous micro-panel layouts the {@link SgemmKernel} streams
 * through (Goto &amp; van de Geijn 2008, section 6): transposition and strided sub-matrices are dealt with here,
 * once per block, so the kernel only ever sees unit-stride data; ragged edges are padded with zeros so the
 * kernel always runs a full MR x NR tile (the padded rows/columns are simply not written back).
 *
 * <pre>
 * packed A block (mc x kc):  panel 0 = rows 0..MR-1 | panel 1 = rows MR..2MR-1 | ...   (MR * KC floats each)
 *   A stored m x k (rowA):   [r=0: p0 p1 .. p(kc-1) ..KC] [r=1: ...] ...     row-major, row stride KC
 *   A stored k x m:          [p=0: r0 r1 .. r(MR-1)] [p=1: r0 .. ] ...       p-major
 * packed B block (kc x nc):  panel 0 = cols 0..NR-1 | panel 1 = cols NR..2NR-1 | ...
 *                            inside a panel: [p=0: c0 c1 .. c(NR-1)] [p=1: ...] ...     (kc * NR floats)
 * </pre>
 *
 * <p>Threading: stateless; each thread packs into its own buffers.
 */
final class SgemmPack {
    /** Whether masked vector loads and stores are single instructions (AVX-512 mask registers). */
    private static final boolean MASKED_MOVES_ARE_FAST = FloatVector.SPECIES_PREFERRED.length() >= 16;
    /** Rows and columns of the machine-code transposes a transposed B is packed with ({@link SgemmTranspose}), or 0. */
    private static final int TRANSPOSE = SgemmTranspose.available() ? SgemmTranspose.BLOCK : 0;

    private SgemmPack() {}

    /**
     * Packs op(A)[i0 : i0+mc, p0 : p0+kc] into {@code ap}: ceil(mc/MR) panels of MR * KC floats. A stored
     * m x k becomes row-major panels (row r of a panel at r * KC: one contiguous copy per row); A stored k x m
     * becomes p-major panels (the MR values of one k step at p * MR: one masked vector copy per k step). Either
     * way no element-by-element transposition; the matching kernel reads each layout ({@code rowA}).
     */
    static void packA(boolean transA, float[] a, int aOff, int lda, int i0, int p0, int mc, int kc, float[] ap) {
        int packed = 0;
        if (transA && !MASKED_MOVES_ARE_FAST && MR < L) {
            packed = packTransposedFullPanels(a, aOff, lda, i0, p0, mc, kc, ap);
        }
        for (int ip = packed, base = packed * KC; ip < mc; ip += MR, base += MR * KC) {
            int rows = Math.min(MR, mc - ip);
            if (transA && !MASKED_MOVES_ARE_FAST) {
                // AVX2: the 6 of 8 lanes would need masked moves, which the JIT does not compile to one instruction
                // there (profiles show Mask.firstTrue in the interpreter-like fallback); 6 plain copies are cheaper.
                int src = aOff + p0 * lda + i0 + ip;
                for (int p = 0, dst = base; p < kc; p++, dst += MR, src += lda) {
                    for (int r = 0; r < rows; r++) ap[dst + r] = a[src + r];
                    for (int r = rows; r < MR; r++) ap[dst + r] = 0f;
                }
            } else if (transA) {
                for (int q = 0; q < MR; q += L) {
                    VectorMask<Float> load = S.indexInRange(q, rows);
                    VectorMask<Float> store = S.indexInRange(q, MR);
                    int src = aOff + p0 * lda + i0 + ip + q;
                    for (int p = 0, dst = base + q; p < kc; p++, dst += MR, src += lda) {
                        FloatVector.fromArray(S, a, src, load).intoArray(ap, dst, store);
                    }
                }
            } else {
                for (int r = 0; r < rows; r++) {
                    System.arraycopy(a, aOff + (i0 + ip + r) * lda + p0, ap, base + r * KC, kc);
                }
                for (int r = rows; r < MR; r++) Arrays.fill(ap, base + r * KC, base + r * KC + kc, 0f);
            }
        }
    }

    /**
     * The full panels of a transposed A where a vector is longer than a panel's k step (AVX2: 8 lanes, MR = 6), p by
     * p: one source row (contiguous in A, so read at the prefetchers' pace) is spread over every panel, one unmasked
     * vector per panel. Its lanes past MR land on the next k step's slots, which the next p then overwrites; the last
     * step, whose spill would reach the next panel, and any vector that would read past A are copied element by
     * element. Column strips, panel by panel, took one scalar load per element from a new cache line every k step.
     *
     * @return rows packed (a multiple of MR); the caller packs the rest
     */
    private static int packTransposedFullPanels(float[] a, int aOff, int lda, int i0, int p0, int mc, int kc, float[] ap) {
        int panels = mc / MR;
        for (int p = 0; p < kc; p++) {
            int src = aOff + (p0 + p) * lda + i0;
            boolean spill = p == kc - 1;
            for (int panel = 0, s = src, d = p * MR; panel < panels; panel++, s += MR, d += MR * KC) {
                if (!spill && s + L <= a.length) {
                    FloatVector.fromArray(S, a, s).intoArray(ap, d);
                } else {
                    for (int r = 0; r < MR; r++) ap[d + r] = a[s + r];
                }
            }
        }
        return panels * MR;
    }

    /**
     * The full panels of a B stored k x n, row by row: each row of the block is read once, front to back, and its NR
     * column runs go to every panel at the same step. Panel by panel, each step's NR floats came from a new cache line
     * ldb floats below the last, a pattern the prefetchers serve worse than one stream per row (the rows' lines were
     * read in column strips, each line a miss).
     *
     * @return columns packed (a multiple of NR); the caller packs the rest
     */
    private static int packRowsIntoFullPanels(float[] b, int bOff, int ldb, int p0, int j0, int kc, int nc, float[] bp) {
        int panels = nc / NR, panelFloats = kc * NR;
        for (int p = 0; p < kc; p++) {
            int src = bOff + (p0 + p) * ldb + j0;
            for (int panel = 0, s = src, d = p * NR; panel < panels; panel++, s += NR, d += panelFloats) {
                FloatVector.fromArray(S, b, s).intoArray(bp, d);
                FloatVector.fromArray(S, b, s + L).intoArray(bp, d + L);
            }
        }
        return panels * NR;
    }

    /**
     * Packs op(B)[p0 : p0+kc, j0 : j0+nc] into {@code bp} (ceil(nc/NR) panels of kc * NR floats). {@code bSeg} and
     * {@code bpSeg} are the segments of {@code b} and {@code bp} for the machine-code transpose (the caller keeps them,
     * so that no call makes one); {@code bSeg} may be null when B is not transposed.
     */
    static void packB(boolean transB, float[] b, MemorySegment bSeg, int bOff, int ldb, int p0, int j0, int kc, int nc,
                      float[] bp, MemorySegment bpSeg) {
        int fullFrom = 0; // columns before this one are packed already
        if (!transB) {
            fullFrom = packRowsIntoFullPanels(b, bOff, ldb, p0, j0, kc, nc, bp);
        }
        for (int jp = fullFrom, base = fullFrom / NR * kc * NR; jp < nc; jp += NR, base += kc * NR) {
            int cols = Math.min(NR, nc - jp);
            if (transB) {
                // B stored n x k: each output column is a contiguous row of B. TRANSPOSE x TRANSPOSE blocks natively
                // where it runs; what that leaves (steps and columns past the last whole block) element by element
                int blocks = TRANSPOSE > 0 ? kc / TRANSPOSE : 0, groups = blocks > 0 ? cols / TRANSPOSE : 0;
                if (groups > 0) {
                    SgemmTranspose.cols(bSeg, bOff + (j0 + jp) * ldb + p0, ldb, bpSeg, base, blocks, groups);
                }
                for (int j = 0; j < cols; j++) {
                    int src = bOff + (j0 + jp + j) * ldb + p0;
                    int from = j < TRANSPOSE * groups ? TRANSPOSE * blocks : 0;
                    for (int p = from, dst = base + j + from * NR; p < kc; p++, dst += NR) bp[dst] = b[src + p];
                }
                if (cols < NR) {
                    for (int p = 0, dst = base; p < kc; p++, dst += NR) Arrays.fill(bp, dst + cols, dst + NR, 0f);
                }
            } else { // B stored k x n, the last, partial panel (packRowsIntoFullPanels did the full ones)
                for (int p = 0, dst = base; p < kc; p++, dst += NR) {
                    int src = bOff + (p0 + p) * ldb + j0 + jp;
                    System.arraycopy(b, src, bp, dst, cols);
                    Arrays.fill(bp, dst + cols, dst + NR, 0f);
                }
            }
        }
    }
}
