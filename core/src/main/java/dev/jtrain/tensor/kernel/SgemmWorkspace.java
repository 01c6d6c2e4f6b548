package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Sgemm.KC;
import static dev.jtrain.tensor.kernel.Sgemm.MC;
import static dev.jtrain.tensor.kernel.Sgemm.NC;
import static dev.jtrain.tensor.kernel.SgemmKernel.MR;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One thread's packing buffers and the blocked loop nest that uses them (see {@link Sgemm} for the loop
 * order and block sizes). Buffers grow to the largest block seen and are then reused, and so are the memory
 * segments the machine code is called with (the packed buffers' for good, C's and a transposed B's while calls keep
 * using the same arrays), so steady-state calls allocate nothing: not even the small segment objects, which at a few
 * hundred thousand per training step would fill the young generation. The price: the last A, B and C a thread used stay
 * reachable until its next product.
 *
 * <p>Threading: confined to one thread (held in a ThreadLocal by {@link Sgemm}).
 */
final class SgemmWorkspace {
    private float[] ap = new float[0];
    private final float[] bp = new float[KC * NC];
    private final float[] tile = new float[MR * NR];
    /** With {@link SgemmKernel#NATIVE}: the MR x NC results that cannot go straight into C, rows NC apart. */
    private final float[] tiles = SgemmKernel.NATIVE ? new float[MR * NC] : tile;
    private float[] row = new float[0];
    private MemorySegment apSeg = MemorySegment.ofArray(ap);
    private final MemorySegment bpSeg = MemorySegment.ofArray(bp), tileSeg = MemorySegment.ofArray(tiles);
    /** The C array of the latest machine-code call and its segment (most products write one C in many calls). */
    private float[] cArray;
    private MemorySegment cSeg;
    /** Likewise the latest transposed B the transposing pack read. */
    private float[] bArray;
    private MemorySegment bSeg;
    /** Lines per L1 set, the in-place test's scratch. */
    private final int[] setLines = new int[L1_SETS];
    /** Likewise the latest A the machine code read in place (see {@link #inPlaceRows}). */
    private float[] aArray;
    private MemorySegment aSeg;

    /** The MR x NR accumulator spill tile. */
    float[] tile() {
        return tile;
    }

    /** Scratch of at least {@code k} floats for {@link SgemmSmall}. */
    float[] row(int k) {
        if (row.length < k) row = new float[k];
        return row;
    }

    /** C[i0:i1, j0:j1] = alpha * op(A)[i0:i1, :] * op(B)[:, j0:j1] + beta * C[i0:i1, j0:j1]. */
    void gemm(boolean transA, boolean transB, int i0, int i1, int j0, int j1, int k, float alpha,
              float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
              float beta, float[] c, int cOff, int ldc) {
        int mcMax = Math.min(MC, roundUp(i1 - i0, MR));
        int apNeed = mcMax * KC;
        if (ap.length < apNeed) {
            ap = new float[apNeed];
            apSeg = MemorySegment.ofArray(ap);
        }
        // equal k blocks and equal n blocks in whole micro-panels (GemmBatches.equalSteps says why)
        int kcStep = GemmBatches.equalSteps(k, KC, 1);
        int ncStep = GemmBatches.equalSteps(j1 - j0, NC, NR);
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc);
            float betaPc = pc == 0 ? beta : 1f;  // later rank-KC updates accumulate onto the first
            for (int ic = i0; ic < i1; ic += MC) {
                int mc = Math.min(MC, i1 - ic);
                int inPlace = transA ? 0 : inPlaceRows(mc, kc, lda);
                if (inPlace < mc) SgemmPack.packA(transA, a, aOff, lda, ic + inPlace, pc, mc - inPlace, kc, ap);
                int aRows = aOff + ic * lda + pc; // where op(A)'s block starts when read in place
                for (int jc = j0; jc < j1; jc += ncStep) {
                    int nc = Math.min(ncStep, j1 - jc);
                    SgemmPack.packB(transB, b, transB ? segmentOfB(b) : null, bOff, ldb, pc, jc, kc, nc, bp, bpSeg);
                    if (inPlace > 0) {
                        nativeMacroKernel(segmentOfA(a), aRows, lda, inPlace, kc, nc, alpha, betaPc, c, cOff + ic * ldc + jc, ldc);
                    }
                    if (inPlace < mc) {
                        macroKernel(!transA, kc, mc - inPlace, nc, alpha, betaPc, c, cOff + (ic + inPlace) * ldc + jc, ldc);
                    }
                }
            }
        }
    }

    /** Sweeps the packed blocks: A micro-panel fixed (L1) while B micro-panels stream from L2. */
    private void macroKernel(boolean rowA, int kc, int mc, int nc, float alpha, float beta,
                             float[] c, int cOff, int ldc) {
        if (SgemmKernel.NATIVE) {
            nativeMacroKernel(rowA, kc, mc, nc, alpha, beta, c, cOff, ldc);
            return;
        }
        for (int ir = 0; ir < mc; ir += MR) {
            int rows = Math.min(MR, mc - ir);
            int apOff = ir * KC;
            for (int jr = 0; jr < nc; jr += NR) {
                SgemmKernel.kernel(rowA, kc, ap, apOff, bp, jr * kc, tile);
                SgemmKernel.writeBack(tile, c, cOff + ir * ldc + jr, ldc, alpha, beta, rows, Math.min(NR, nc - jr));
            }
        }
    }

    /**
     * As {@link #macroKernel}, one machine-code call per A micro-panel sweeping all B micro-panels. Full tiles with
     * alpha = 1 and beta = 0 or 1 (every product autograd asks for) are stored or added into C by the kernel, as the
     * Java write-back would (1 * acc is acc; c + acc is one rounding either way); the rest go through {@code tiles}
     * and {@link SgemmKernel#writeBack}.
     */
    private void nativeMacroKernel(boolean rowA, int kc, int mc, int nc, float alpha, float beta,
                                   float[] c, int cOff, int ldc) {
        nativeMacroKernel(apSeg, 0, rowA ? KC : 0, mc, kc, nc, alpha, beta, c, cOff, ldc);
    }

    /**
     * The machine-code sweep over A panels read from {@code aSrc}: row-major with rows {@code aStride} floats apart
     * from {@code aStart} when {@code aStride > 0} (the packed block's KC, or an A read in place), p-major packed
     * panels when 0.
     */
    private void nativeMacroKernel(MemorySegment aSrc, int aStart, int aStride, int mc, int kc, int nc, float alpha,
                                   float beta, float[] c, int cOff, int ldc) {
        if (c != cArray) {
            cArray = c;
            cSeg = MemorySegment.ofArray(c);
        }
        boolean direct = alpha == 1f && (beta == 0f || beta == 1f);
        int panels = (nc + NR - 1) / NR, full = nc / NR;
        for (int ir = 0; ir < mc; ir += MR) {
            int rows = Math.min(MR, mc - ir);
            int panel = aStart + (aStride == 0 ? ir * KC : ir * aStride);
            int cRow = cOff + ir * ldc;
            int viaTiles = 0; // first B panel that goes through the tile buffer
            if (direct && rows == MR && full > 0) {
                SgemmKernel.runNative(aSrc, panel, aStride, bpSeg, 0, kc, full, cSeg, cRow, ldc, beta == 1f);
                viaTiles = full;
            }
            if (viaTiles < panels) {
                SgemmKernel.runNative(aSrc, panel, aStride, bpSeg, viaTiles * kc * NR, kc, panels - viaTiles,
                        tileSeg, 0, NC, false);
                SgemmKernel.writeBack(tiles, 0, NC, c, cRow + viaTiles * NR, ldc, alpha, beta, rows, nc - viaTiles * NR);
            }
        }
    }

    /**
     * How many leading rows of an A stored m x k the machine code reads where they are, unpacked: whole MR-row panels,
     * each MR rows of kc contiguous floats lda apart, which the kernel's row-major path reads as a packed panel with a
     * longer row stride. Packing them would copy every element of A once per product, only to lay out rows that are
     * already contiguous (the forward products and the input gradients: ~3% of a training step). The panel must still
     * stay in L1 while the B panels stream past it (Goto &amp; van de Geijn 2008, section 6.2): rows whose stride is a
     * multiple of the cache's set span land in the same sets, so the stride is accepted only when no L1 set holds more
     * than {@link #L1_WAYS_FOR_A} of the panel's lines; otherwise (and without the machine code) A is packed.
     */
    private int inPlaceRows(int mc, int kc, int lda) {
        if (!SgemmKernel.NATIVE || mc < MR || !aPanelFitsL1(kc, lda, setLines)) return 0;
        return mc / MR * MR;
    }

    /** L1d geometry the in-place test assumes: 64-byte lines, 64 sets (32 KiB, 8-way on Zen 4; 48 KiB 12-way on Intel). */
    private static final int L1_SETS = 64, LINE_FLOATS = 16;
    /** Ways of one set the A panel may take, leaving the rest to the B panels and C streaming through. */
    static final int L1_WAYS_FOR_A = 4;

    /**
     * Whether MR rows of kc floats, lda apart and starting anywhere in a line, put at most L1_WAYS_FOR_A lines in any
     * set. Each line is counted once: rows less than a line apart past their end (lda close to kc) share a line, and
     * counting it for both rows made a 12-row panel of back-to-back rows look like five ways of a set, not four.
     */
    static boolean aPanelFitsL1(int kc, int lda, int[] lines) {
        return aPanelFitsL1(kc, lda, lines, L1_WAYS_FOR_A);
    }

    /** {@link #aPanelFitsL1} with at most {@code ways} lines in a set, 4-byte elements (floats, or bf16 pairs). */
    static boolean aPanelFitsL1(int kc, int lda, int[] lines, int ways) {
        int span = (kc + LINE_FLOATS - 1) / LINE_FLOATS + 1; // lines per row, one more where the row starts mid-line
        if (span >= L1_SETS) return false;
        Arrays.fill(lines, 0);
        long counted = -1; // the last line counted: rows go up in memory, so a shared line is the previous row's last
        for (int r = 0; r < MR; r++) {
            long first = (long) r * lda / LINE_FLOATS;
            for (long line = Math.max(first, counted + 1); line < first + span; line++) {
                if (++lines[(int) (line % L1_SETS)] > ways) return false;
            }
            counted = first + span - 1;
        }
        return true;
    }

    private MemorySegment segmentOfA(float[] a) {
        if (a != aArray) {
            aArray = a;
            aSeg = MemorySegment.ofArray(a);
        }
        return aSeg;
    }

    private MemorySegment segmentOfB(float[] b) {
        if (b != bArray) {
            bArray = b;
            bSeg = MemorySegment.ofArray(b);
        }
        return bSeg;
    }

    private static int roundUp(int x, int unit) {
        return (x + unit - 1) / unit * unit;
    }
}
