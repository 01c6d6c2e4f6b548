package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16AmxPack.KB;
import static dev.jtrain.tensor.kernel.Bf16AmxPack.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.lang.foreign.MemorySegment;

/**
 * One thread's packing buffers and the blocked loop nest around the AMX micro-kernel: {@link Bf16Workspace}'s loops
 * with 32-row A panels in {@link Bf16AmxPack}'s layout and B panels whose pair rows are padded to whole k blocks.
 * The tile unit sums 32 k at a time, so its bits are its own (not the AVX-512 kernel's), but the same on every
 * thread count and split, since threads only divide C and the k blocks ({@link #kcStep}) depend on k alone.
 *
 * <p>Threading: confined to one thread (held in a ThreadLocal by {@link Bf16Gemm}).
 */
final class Bf16AmxWorkspace {
    /**
     * Depth of a rank-k update, in values: an A panel is then 32 x 1024 bf16 = 64 KiB, streamed from L2 past each B
     * panel, and C is loaded and stored once per 1024 k. 256 and 512 measured slower (more passes over C, each tile
     * of C loaded and stored again); bench/MEASUREMENTS.md, "AMX".
     */
    static final int KC = 1024;
    /** Width of a packed B block: 512 pair rows x 512 columns x 4 B = 1 MiB, half of a 2 MiB L2 (256 and 1024 were slower). */
    static final int NC = 512;
    /** Most rows of a packed A block: 4096 rows x 2 KiB = 8 MiB at KC, in L3, as {@link Bf16Gemm#MC}. */
    static final int MC = 4096;

    /** Depth of the k blocks for a product over {@code k}: equal blocks in whole tiles of 32 k where k allows. */
    static int kcStep(int k) {
        return GemmBatches.equalSteps(k, KC, KB);
    }

    private MemorySegment ap = MemorySegment.NULL;
    private final MemorySegment bp = PackBuffers.aligned((long) Bf16AmxPack.kblocks(KC) * Bf16AmxKernel.BLOCK_PAIRS * NC * Integer.BYTES);
    /** MR x NC results of the panels that cannot go straight into C, row-major with rows NC apart. */
    private final float[] tiles = new float[MR * NC];

    /** Rows of the A blocks for {@code rows} rows: equal blocks in whole 32-row panels ({@link Bf16Workspace#mcStep}). */
    static int mcStep(int rows) {
        return GemmBatches.equalSteps(rows, MC, MR);
    }

    /** Words of a packed A block of {@code mc} rows and depth {@code kc}. */
    static int blockWords(int mc, int kc) {
        return (mc + MR - 1) / MR * Bf16AmxPack.panelWords(kc);
    }

    /** C[i0:i1, j0:j1] = alpha * op(A)[i0:i1, :] * op(B)[:, j0:j1] + beta * C[i0:i1, j0:j1], in bf16 compute. */
    void gemm(Bf16Operands.A a, Bf16Operands.B b, int i0, int i1, int j0, int j1, int k, float alpha,
              float beta, float[] c, int cOff, int ldc) {
        int kcStep = kcStep(k), mcStep = mcStep(i1 - i0);
        ap = PackBuffers.atLeast(ap, (long) blockWords(mcStep, kcStep) * Integer.BYTES);
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc);
            for (int ic = i0; ic < i1; ic += mcStep) {
                int mc = Math.min(mcStep, i1 - ic);
                a.packAmx(ic, pc, mc, kc, ap, 0);
                multiply(ap, ic, mc, pc, kc, b, j0, j1, alpha, pc == 0 ? beta : 1f, c, cOff, ldc);
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
        int ncStep = GemmBatches.equalSteps(j1 - j0, NC, NR);
        MemorySegment bpSeg = bp, tileSeg = MemorySegment.ofArray(tiles), cSeg = MemorySegment.ofArray(c);
        boolean direct = alpha == 1f && (beta == 0f || beta == 1f);
        for (int jc = j0; jc < j1; jc += ncStep) {
            int nc = Math.min(ncStep, j1 - jc);
            b.pack(pc, jc, kc, nc, bpSeg, kpRows);
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
