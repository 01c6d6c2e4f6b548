package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Sgemm.KC;
import static dev.jtrain.tensor.kernel.Sgemm.MC;
import static dev.jtrain.tensor.kernel.Sgemm.NC;
import static dev.jtrain.tensor.kernel.SgemmKernel.MR;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;

import java.lang.foreign.MemorySegment;

/**
 * One thread's packing buffers and the blocked loop nest that uses them (see {@link Sgemm} for the loop
 * order and block sizes). Buffers grow to the largest block seen and are then reused, and so are the memory
 * segments the machine code is called with (the packed buffers' for good, C's and a transposed B's while calls keep
 * using the same arrays), so steady-state calls allocate nothing: not even the small segment objects, which at a few
 * hundred thousand per training step would fill the young generation. The price: the last C and B a thread used stay
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
                SgemmPack.packA(transA, a, aOff, lda, ic, pc, mc, kc, ap);
                for (int jc = j0; jc < j1; jc += ncStep) {
                    int nc = Math.min(ncStep, j1 - jc);
                    SgemmPack.packB(transB, b, transB ? segmentOfB(b) : null, bOff, ldb, pc, jc, kc, nc, bp, bpSeg);
                    macroKernel(!transA, kc, mc, nc, alpha, betaPc, c, cOff + ic * ldc + jc, ldc);
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
        if (c != cArray) {
            cArray = c;
            cSeg = MemorySegment.ofArray(c);
        }
        boolean direct = alpha == 1f && (beta == 0f || beta == 1f);
        int panels = (nc + NR - 1) / NR, full = nc / NR;
        for (int ir = 0; ir < mc; ir += MR) {
            int rows = Math.min(MR, mc - ir);
            int panel = ir * KC;
            int cRow = cOff + ir * ldc;
            int viaTiles = 0; // first B panel that goes through the tile buffer
            if (direct && rows == MR && full > 0) {
                SgemmKernel.runNative(apSeg, panel, rowA ? KC : 0, bpSeg, 0, kc, full, cSeg, cRow, ldc, beta == 1f);
                viaTiles = full;
            }
            if (viaTiles < panels) {
                SgemmKernel.runNative(apSeg, panel, rowA ? KC : 0, bpSeg, viaTiles * kc * NR, kc, panels - viaTiles,
                        tileSeg, 0, NC, false);
                SgemmKernel.writeBack(tiles, 0, NC, c, cRow + viaTiles * NR, ldc, alpha, beta, rows, nc - viaTiles * NR);
            }
        }
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
