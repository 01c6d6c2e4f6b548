package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16Gemm.KC;
import static dev.jtrain.tensor.kernel.Bf16Gemm.MC;
import static dev.jtrain.tensor.kernel.Bf16Gemm.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NC;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.lang.foreign.MemorySegment;

/**
 * One thread's bf16 packing buffers and the blocked loop nest around the native micro-kernel (the five loops of
 * {@link Sgemm}, with k counted in pairs). Full tiles with alpha = 1 and beta = 0 or 1 (every product autograd
 * asks for) go straight into C from the kernel; ragged edges and other alpha/beta go through a tile buffer and
 * {@link SgemmKernel#writeBack}. Buffers grow to the largest block seen and are then reused.
 *
 * <p>Threading: confined to one thread (held in a ThreadLocal by {@link Bf16Gemm}).
 */
final class Bf16Workspace {
    private int[] ap = new int[0];
    /** Off the heap, so that the packers' vector stores into it compile to stores ({@link PackBuffers}). */
    private final MemorySegment bpSeg = PackBuffers.aligned((long) KC / 2 * NC * Integer.BYTES);
    /** MR x NC results of the panels that cannot go straight into C, row-major with rows NC apart. */
    private final float[] tiles = new float[MR * NC];
    /** Scratch of {@link #inPlaceRows}: lines per L1 set. */
    private final int[] lines = new int[64];

    /** Depth of the k blocks for a product over {@code k}: equal blocks of an even number of values (a pair never straddles two). */
    static int kcStep(int k) {
        return GemmBatches.equalSteps(k, KC, 2);
    }

    /**
     * Rows of the A blocks for {@code rows} rows: equal blocks in whole panels, so that rows just past MC make two
     * equal blocks, not MC and a sliver that packs all of B again.
     */
    static int mcStep(int rows) {
        return GemmBatches.equalSteps(rows, MC, MR);
    }

    /** C[i0:i1, j0:j1] = alpha * op(A)[i0:i1, :] * op(B)[:, j0:j1] + beta * C[i0:i1, j0:j1], in bf16 compute. */
    void gemm(Bf16Operands.A a, Bf16Operands.B b, int i0, int i1, int j0, int j1, int k, float alpha,
              float beta, float[] c, int cOff, int ldc) {
        gemm(a, b, i0, i1, j0, j1, k, alpha, beta, c, cOff, ldc, null, 0);
    }

    /**
     * {@link #gemm}, plus with {@code bias} (alpha 1 and beta 0 only) the row vector {@code bias[biasOff + j]} added
     * to column j of every row as the first k block is stored ({@link #multiply}).
     */
    void gemm(Bf16Operands.A a, Bf16Operands.B b, int i0, int i1, int j0, int j1, int k, float alpha,
              float beta, float[] c, int cOff, int ldc, float[] bias, int biasOff) {
        int kcStep = kcStep(k), mcStep = mcStep(i1 - i0);
        if (ap.length < mcStep * (kcStep / 2)) ap = new int[mcStep * (kcStep / 2)];
        MemorySegment apSeg = MemorySegment.ofArray(ap);
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc);
            for (int ic = i0; ic < i1; ic += mcStep) {
                int mc = Math.min(mcStep, i1 - ic), inPlace = inPlaceRows(a.inPlace(), mc, kc);
                if (inPlace < mc) a.pack(ic + inPlace, pc, mc - inPlace, kc, ap, apSeg, 0);
                multiply(a.rowMajor(), a.inPlace(), inPlace, ap, apSeg, ic, mc, pc, kc, b, j0, j1, alpha, pc == 0 ? beta : 1f,
                        c, cOff, ldc, pc == 0 ? bias : null, biasOff);
            }
        }
    }

    /**
     * How many of a block's mc rows (whole MR-row panels) the kernel reads where A is stored, kc values deep: none
     * unless A's layout allows it ({@link Bf16Operands.InPlace}) and its rows, {@code stride} words apart, crowd no L1
     * set more than a packed panel would (Goto &amp; van de Geijn 2008, 6.2: the panel must stay in L1 while B streams
     * past it). Rows back to back are a packed panel already, so a bf16 A stored m x k with k within one block is
     * never copied; rows 4 KiB apart would put all twelve in the same sets, and are packed.
     */
    int inPlaceRows(Bf16Operands.InPlace a, int mc, int kc) {
        if (a == null || mc < MR) return 0;
        int kp = kc / 2, packedPerSet = (MR * kp + 15) / 16 / 64 + 1; // a packed panel's lines per set, one for its start
        return SgemmWorkspace.aPanelFitsL1(kp, a.stride(), lines, Math.max(SgemmWorkspace.L1_WAYS_FOR_A, packedPerSet))
                ? mc / MR * MR : 0;
    }

    /**
     * C[ic : ic+mc, j0:j1] = alpha * A * op(B)[pc : pc+kc, j0:j1] + beta * C for an A block whose first
     * {@code inPlace} rows the kernel reads from {@code src} and whose other rows are packed in {@code ap} from word 0
     * (by this thread, or by all threads together: {@link Bf16Gemm}): packs B block by block into this workspace and
     * runs the kernel over every A panel. With {@code bias} (alpha 1, beta 0), C = A * op(B) + bias[biasOff + j]
     * instead, each entry rounded once as an add into a C holding the bias would be: the kernel adds it to the
     * full tiles it stores, and the tiles through the buffer get it here, so no pass copies the bias into C first.
     */
    void multiply(boolean rowA, Bf16Operands.InPlace src, int inPlace, int[] ap, MemorySegment apSeg, int ic, int mc,
                  int pc, int kc, Bf16Operands.B b, int j0, int j1, float alpha, float beta, float[] c, int cOff, int ldc,
                  float[] bias, int biasOff) {
        if (bias != null && (alpha != 1f || beta != 0f)) {
            throw new IllegalArgumentException("bf16 gemm with a bias row: needs alpha 1 and beta 0, got " + alpha + ", " + beta);
        }
        int kp = (kc + 1) / 2;
        int ncStep = GemmBatches.equalSteps(j1 - j0, NC, NR);
        MemorySegment tileSeg = MemorySegment.ofArray(tiles), cSeg = MemorySegment.ofArray(c);
        MemorySegment biasSeg = bias != null ? MemorySegment.ofArray(bias) : null;
        boolean direct = alpha == 1f && (beta == 0f || beta == 1f);
        for (int jc = j0; jc < j1; jc += ncStep) {
            int nc = Math.min(ncStep, j1 - jc);
            b.pack(pc, jc, kc, nc, bpSeg, kp);
            int panels = (nc + NR - 1) / NR, full = nc / NR;
            for (int ir = 0; ir < mc; ir += MR) {
                int rows = Math.min(MR, mc - ir);
                MemorySegment panel = panel(src, inPlace, apSeg, ic, ir, pc, kp);
                int aStride = ir < inPlace ? src.stride() : rowA ? kp : 0;
                // the next call's A panel; after the last, the first (the next column block starts there)
                MemorySegment next = panel(src, inPlace, apSeg, ic, ir + MR < mc ? ir + MR : 0, pc, kp);
                int cRow = cOff + (ic + ir) * ldc + jc;
                int viaTiles = 0; // first panel that goes through the tile buffer
                // a panel of at most 4 rows (the last of a block 4 rows past a multiple of 12) runs the 4-row kernel
                boolean short4 = rows <= Bf16Kernel.SHORT_ROWS;
                if (direct && (rows == MR || rows == Bf16Kernel.SHORT_ROWS) && full > 0) {
                    MemorySegment out = cSeg.asSlice((long) cRow * Float.BYTES);
                    if (bias != null) {
                        MemorySegment row = biasSeg.asSlice((long) (biasOff + jc) * Float.BYTES);
                        if (short4) Bf16Kernel.runShortWithBias(panel, aStride, bpSeg, kp, full, out, ldc, next, row);
                        else Bf16Kernel.runWithBias(panel, aStride, bpSeg, kp, full, out, ldc, next, row);
                    } else if (short4) {
                        Bf16Kernel.runShort(panel, aStride, bpSeg, kp, full, out, ldc, beta == 1f, next);
                    } else {
                        Bf16Kernel.run(panel, aStride, bpSeg, kp, full, out, ldc, beta == 1f, next);
                    }
                    viaTiles = full;
                }
                if (viaTiles < panels) {
                    MemorySegment rest = bpSeg.asSlice((long) viaTiles * kp * NR * Integer.BYTES);
                    if (short4) Bf16Kernel.runShort(panel, aStride, rest, kp, panels - viaTiles, tileSeg, NC, false, next);
                    else Bf16Kernel.run(panel, aStride, rest, kp, panels - viaTiles, tileSeg, NC, false, next);
                    int cols = nc - viaTiles * NR, at = cRow + viaTiles * NR;
                    SgemmKernel.writeBack(tiles, 0, NC, c, at, ldc, alpha, beta, rows, cols);
                    if (bias != null) {
                        for (int r = 0; r < rows; r++) VectorOps.addRowInto(bias, biasOff + jc + viaTiles * NR, c, at + r * ldc, cols);
                    }
                }
            }
        }
    }

    /** The A panel of block rows [ir, ir + MR): where A is stored for the first {@code inPlace} rows, else packed. */
    private static MemorySegment panel(Bf16Operands.InPlace src, int inPlace, MemorySegment apSeg, int ic, int ir, int pc,
                                       int kp) {
        return ir < inPlace ? src.at(ic + ir, pc / 2) : apSeg.asSlice((long) (ir - inPlace) * kp * Integer.BYTES);
    }
}
