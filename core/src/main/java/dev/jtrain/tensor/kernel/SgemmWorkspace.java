package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Sgemm.KC;
import static dev.jtrain.tensor.kernel.Sgemm.MC;
import static dev.jtrain.tensor.kernel.Sgemm.NC;
import static dev.jtrain.tensor.kernel.SgemmKernel.MR;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;

/**
 * One thread's packing buffers and the blocked loop nest that uses them (see {@link Sgemm} for the loop
 * order and block sizes). Buffers grow to the largest block seen and are then reused, so steady-state calls
 * allocate nothing.
 *
 * <p>Threading: confined to one thread (held in a ThreadLocal by {@link Sgemm}).
 */
final class SgemmWorkspace {
    private float[] ap = new float[0];
    private final float[] bp = new float[KC * NC];
    private final float[] tile = new float[MR * NR];
    private float[] row = new float[0];

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
        if (ap.length < apNeed) ap = new float[apNeed];
        // Equal k blocks (k = 1088 -> 5 x 218, not 4 x 256 + 64): a short last block pays a full C
        // read-modify-write for few FMAs. Likewise equal n blocks, in whole micro-panels.
        int kBlocks = (k + KC - 1) / KC;
        int kcStep = (k + kBlocks - 1) / kBlocks;
        int nBlocks = (j1 - j0 + NC - 1) / NC;
        int ncStep = Math.min(NC, ((j1 - j0 + nBlocks - 1) / nBlocks + NR - 1) / NR * NR);
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc);
            float betaPc = pc == 0 ? beta : 1f;  // later rank-KC updates accumulate onto the first
            for (int ic = i0; ic < i1; ic += MC) {
                int mc = Math.min(MC, i1 - ic);
                SgemmPack.packA(transA, a, aOff, lda, ic, pc, mc, kc, ap);
                for (int jc = j0; jc < j1; jc += ncStep) {
                    int nc = Math.min(ncStep, j1 - jc);
                    SgemmPack.packB(transB, b, bOff, ldb, pc, jc, kc, nc, bp);
                    macroKernel(!transA, kc, mc, nc, alpha, betaPc, c, cOff + ic * ldc + jc, ldc);
                }
            }
        }
    }

    /** Sweeps the packed blocks: A micro-panel fixed (L1) while B micro-panels stream from L2. */
    private void macroKernel(boolean rowA, int kc, int mc, int nc, float alpha, float beta,
                             float[] c, int cOff, int ldc) {
        for (int ir = 0; ir < mc; ir += MR) {
            int rows = Math.min(MR, mc - ir);
            int apOff = ir * KC;
            for (int jr = 0; jr < nc; jr += NR) {
                SgemmKernel.kernel(rowA, kc, ap, apOff, bp, jr * kc, tile);
                SgemmKernel.writeBack(tile, c, cOff + ir * ldc + jr, ldc, alpha, beta, rows, Math.min(NR, nc - jr));
            }
        }
    }

    private static int roundUp(int x, int unit) {
        return (x + unit - 1) / unit * unit;
    }
}
