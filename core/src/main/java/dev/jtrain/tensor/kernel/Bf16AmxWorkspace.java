package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16AmxPack.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.KC;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NC;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.lang.foreign.MemorySegment;

/**
 * One thread's packing buffers and the blocked loop nest around the AMX micro-kernel: {@link Bf16Workspace}'s loops
 * with 32-row A panels in {@link Bf16AmxPack}'s layout and B panels whose pair rows are padded to whole k blocks.
 * The k blocks ({@link Bf16Workspace#kcStep}) and therefore the order of the sums are those of the AVX-512 kernel's
 * nest; within a block the tile unit sums 32 k at a time, so its bits are its own, but the same on every thread
 * count and split, since threads only divide C.
 *
 * <p>Threading: confined to one thread (held in a ThreadLocal by {@link Bf16Gemm}).
 */
final class Bf16AmxWorkspace {
    /** Most rows of a packed A block: 4096 rows x 1 KiB per 512 k = 4 MiB at KC, the L2-to-L3 block of one thread. */
    static final int MC = 4096;

    private int[] ap = new int[0];
    private final int[] bp = new int[Bf16AmxPack.kblocks(KC) * Bf16AmxKernel.BLOCK_PAIRS * NC];
    /** MR x NC results of the panels that cannot go straight into C, row-major with rows NC apart. */
    private final float[] tiles = new float[MR * NC];

    /** Rows of the A blocks for {@code rows} rows: equal blocks in whole 32-row panels ({@link Bf16Workspace#mcStep}). */
    static int mcStep(int rows) {
        int mBlocks = (rows + MC - 1) / MC;
        return ((rows + mBlocks - 1) / mBlocks + MR - 1) / MR * MR;
    }

    /** Words of a packed A block of {@code mc} rows and depth {@code kc}. */
    static int blockWords(int mc, int kc) {
        return (mc + MR - 1) / MR * Bf16AmxPack.panelWords(kc);
    }

    /** C[i0:i1, j0:j1] = alpha * op(A)[i0:i1, :] * op(B)[:, j0:j1] + beta * C[i0:i1, j0:j1], in bf16 compute. */
    void gemm(Bf16Operands.A a, Bf16Operands.B b, int i0, int i1, int j0, int j1, int k, float alpha,
              float beta, float[] c, int cOff, int ldc) {
        int kcStep = Bf16Workspace.kcStep(k), mcStep = mcStep(i1 - i0);
        if (ap.length < blockWords(mcStep, kcStep)) ap = new int[blockWords(mcStep, kcStep)];
        MemorySegment apSeg = MemorySegment.ofArray(ap);
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc);
            for (int ic = i0; ic < i1; ic += mcStep) {
                int mc = Math.min(mcStep, i1 - ic);
                a.packAmx(ic, pc, mc, kc, ap, apSeg, 0);
                multiply(apSeg, ic, mc, pc, kc, b, j0, j1, alpha, pc == 0 ? beta : 1f, c, cOff, ldc);
            }
        }
    }

    /**
     * C[ic : ic+mc, j0:j1] = alpha * A * op(B)[pc : pc+kc, j0:j1] + beta * C for an A block already packed in
     * {@code apSeg} (by this thread, or by all threads together: {@link Bf16Gemm}): packs B block by block into this
     * workspace and runs the kernel over every A panel. Full 32 x 32 tiles with alpha = 1 and beta 0 or 1 go straight
     * into C (the kernel loads C's tiles and adds to them); the rest through the tile buffer.
     */
    void multiply(MemorySegment apSeg, int ic, int mc, int pc, int kc, Bf16Operands.B b, int j0, int j1, float alpha,
                  float beta, float[] c, int cOff, int ldc) {
        int kblocks = Bf16AmxPack.kblocks(kc), kpRows = kblocks * Bf16AmxKernel.BLOCK_PAIRS;
        long panelBytes = (long) Bf16AmxPack.panelWords(kc) * Integer.BYTES, bPanelBytes = (long) kpRows * NR * Integer.BYTES;
        int nBlocks = (j1 - j0 + NC - 1) / NC;
        int ncStep = Math.min(NC, ((j1 - j0 + nBlocks - 1) / nBlocks + NR - 1) / NR * NR);
        MemorySegment bpSeg = MemorySegment.ofArray(bp), tileSeg = MemorySegment.ofArray(tiles), cSeg = MemorySegment.ofArray(c);
        boolean direct = alpha == 1f && (beta == 0f || beta == 1f);
        for (int jc = j0; jc < j1; jc += ncStep) {
            int nc = Math.min(ncStep, j1 - jc);
            b.pack(pc, jc, kc, nc, bp, bpSeg, kpRows);
            int panels = (nc + NR - 1) / NR, full = nc / NR;
            for (int ir = 0; ir < mc; ir += MR) {
                int rows = Math.min(MR, mc - ir);
                MemorySegment panel = apSeg.asSlice(ir / MR * panelBytes);
                int cRow = cOff + (ic + ir) * ldc + jc;
                int viaTiles = 0; // first panel that goes through the tile buffer
                if (direct && rows == MR && full > 0) {
                    Bf16AmxKernel.run(panel, bpSeg, kblocks, full, cSeg.asSlice((long) cRow * Float.BYTES), ldc, beta == 1f);
                    viaTiles = full;
                }
                if (viaTiles < panels) {
                    Bf16AmxKernel.run(panel, bpSeg.asSlice(viaTiles * bPanelBytes), kblocks, panels - viaTiles, tileSeg, NC, false);
                    SgemmKernel.writeBack(tiles, 0, NC, c, cRow + viaTiles * NR, ldc, alpha, beta, rows, nc - viaTiles * NR);
                }
            }
        }
    }
}
