package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16Gemm.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.lang.foreign.MemorySegment;

/**
 * A right-hand operand op(B) (K x N) rounded and packed for the bf16 micro-kernel once, then multiplied by many
 * left-hand blocks that each use a range of its k rows and a prefix of its columns: the shape of causal attention,
 * where a row block [r0, r1) of a head reads keys and values [0, r1) only, and a column block [c0, c1) rows [c0, T).
 * {@link Bf16Gemm} packs B anew per call, so blocking the triangle packed k and v once per block (2.5 times the
 * head's operands at T = 256); here each is packed once per head.
 *
 * <p>Layout: {@link Bf16Pack#packB}'s, with all of K in one block: panel t (columns 32t ..) holds kp = ceil(K / 2)
 * pair rows of 32 words. A k range [k0, k1) with k0 even is then pair rows k0 / 2 .. of every panel, so a product
 * runs the kernel once per A panel and B panel, with the panel's base moved to the range. The values and the order
 * of the sums are those of {@code Bf16Gemm.gemm} on the same range (one k block), so results match it bit for bit.
 *
 * <p>Needs the native kernel ({@link #available}). Threading: confined to one thread; buffers grow and are reused.
 */
public final class Bf16PackedB {
    private int[] bp = new int[0], ap = new int[0], saved = new int[0];
    private final float[] tiles = new float[MR * NR];
    private int k, n, kp;

    /**
     * Whether products run here: bf16 products run on the AVX512_BF16 kernel. Under AMX they do not: the tile
     * kernel sums 32 k per step, so a product here would not match {@code Bf16Gemm.gemm}'s bits, and attention takes
     * {@code Bf16Gemm} per head instead.
     */
    public static boolean available() {
        return Bf16Gemm.isNative() && !Bf16Gemm.isAmx();
    }

    /** Packs op(B) (k x n; B stored n x k when {@code transB}) from {@code b[bOff]}, rows {@code ldb} apart. */
    public Bf16PackedB pack(boolean transB, int k, int n, float[] b, int bOff, int ldb) {
        if (!available()) throw new IllegalStateException("bf16 packed operand: needs the AVX512_BF16 kernel; here " + Bf16Gemm.backend());
        if (k < 1 || n < 1) throw new IllegalArgumentException("bf16 packed operand: empty, k=" + k + " n=" + n);
        SgemmArgs.matrix("bf16 packed operand", "B", transB ? n : k, transB ? k : n, b, bOff, ldb, 0);
        this.k = k;
        this.n = n;
        this.kp = (k + 1) / 2;
        int panels = (n + NR - 1) / NR;
        if (bp.length < panels * kp * NR) bp = new int[panels * kp * NR];
        Bf16Pack.packB(transB, b, MemorySegment.ofArray(b), bOff, ldb, 0, 0, k, n, MemorySegment.ofArray(bp));
        return this;
    }

    /**
     * C[0:m, 0:n1] = op(A) * op(B)[k0:k1, 0:n1], overwriting C. op(A) is m x (k1 - k0): its column 0 meets row k0 of
     * op(B); A is stored m x (k1 - k0), or (k1 - k0) x m when {@code transA}, from {@code a[aOff]}, rows {@code lda}
     * apart. {@code k0} must be even (a pair never straddles the range's start).
     */
    public void multiply(boolean transA, int m, int k0, int k1, int n1, float[] a, int aOff, int lda,
                         float[] c, int cOff, int ldc) {
        multiply(transA, m, k0, k1, n1, a, aOff, lda, c, cOff, ldc, -1, false);
    }

    /**
     * {@link #multiply} for a block of rows of a causal product: row i of A is row {@code firstRow + i} of the
     * triangle, which needs only what lies below {@code firstRow + i + 1}: op(B)'s columns ({@code columns}: S =
     * q·kᵀ and dP = dy·vᵀ, whose entries past a row's prefix its softmax overwrites), or the k range ({@code k0} = 0:
     * P·v and dS·k, whose A is zero there). Each A panel stops at its last row's bound, rounded up to whole B panels
     * or to even k, where the block's rectangle ran every panel to its end: a 64-row block's diagonal tile is half
     * padding. Entries of C past a panel's columns are then not written; a product over k gives the same values,
     * its terms past the bound having been exact zeros.
     */
    public void multiplyCausal(boolean columns, int firstRow, boolean transA, int m, int k0, int k1, int n1, float[] a,
                               int aOff, int lda, float[] c, int cOff, int ldc) {
        if (firstRow < 0 || (!columns && k0 != 0)) {
            throw new IllegalArgumentException("bf16 causal product: first row " + firstRow + " must be >= 0, and a bound on k"
                    + " needs the range to start at 0 (k0=" + k0 + ")");
        }
        multiply(transA, m, k0, k1, n1, a, aOff, lda, c, cOff, ldc, firstRow, columns);
    }

    private void multiply(boolean transA, int m, int k0, int k1, int n1, float[] a, int aOff, int lda,
                          float[] c, int cOff, int ldc, int firstRow, boolean columns) {
        if ((k0 & 1) != 0 || k0 < 0 || k1 > k || k0 >= k1 || n1 < 1 || n1 > n) {
            throw new IllegalArgumentException("bf16 packed product over k [" + k0 + ", " + k1 + ") and columns [0, " + n1
                    + ") of a packed " + k + " x " + n + " operand: k0 must be even and the ranges inside it");
        }
        int kc = k1 - k0, kpc = (kc + 1) / 2;
        if (m < 0) throw new IllegalArgumentException("bf16 packed product: negative m=" + m);
        if (m == 0) return;
        SgemmArgs.matrix("bf16 packed product", "A", transA ? kc : m, transA ? m : kc, a, aOff, lda, 0);
        SgemmArgs.matrix("bf16 packed product", "C", m, n1, c, cOff, ldc, 0);
        int panelsA = (m + MR - 1) / MR;
        if (ap.length < panelsA * MR * kpc) ap = new int[panelsA * MR * kpc];
        MemorySegment apSeg = MemorySegment.ofArray(ap), bpSeg = MemorySegment.ofArray(bp);
        MemorySegment cSeg = MemorySegment.ofArray(c), tileSeg = MemorySegment.ofArray(tiles);
        Bf16Pack.packA(transA, a, MemorySegment.ofArray(a), aOff, lda, 0, 0, m, kc, ap, apSeg, 0);
        int aStride = Bf16Pack.rowMajorA(transA) ? kpc : 0;
        int full = n1 / NR, panelsB = (n1 + NR - 1) / NR;
        long rangeBytes = (long) (k0 / 2) * NR * Integer.BYTES, panelBytes = (long) kp * NR * Integer.BYTES;
        // An odd range that ends inside the operand ends mid-pair: the last pair row's high halves hold row k1, outside
        // the range, which A's zero half would meet as 0 * B[k1], NaN where B[k1] is infinite or NaN (causal attention
        // would then read a future token). For this call they read as zero, as Bf16Gemm's own packing of the range has.
        int cut = (kc & 1) != 0 && k1 < k ? (k1 - 1) / 2 : -1;
        if (cut >= 0) maskHighHalves(cut, panelsB, true);
        try {
            sweep(m, n1, kpc, aStride, apSeg, bpSeg, cSeg, tileSeg, rangeBytes, panelBytes, c, cOff, ldc, full, panelsB,
                    firstRow, columns);
        } finally {
            if (cut >= 0) maskHighHalves(cut, panelsB, false);
        }
    }

    /** Clears ({@code clear}) or restores the high halves of pair row {@code row} in the first {@code panels} panels. */
    private void maskHighHalves(int row, int panels, boolean clear) {
        if (saved.length < panels * NR) saved = new int[panels * NR];
        for (int t = 0; t < panels; t++) {
            int at = (t * kp + row) * NR;
            for (int j = 0; j < NR; j++) {
                if (clear) {
                    saved[t * NR + j] = bp[at + j];
                    bp[at + j] &= 0xFFFF;
                } else {
                    bp[at + j] = saved[t * NR + j];
                }
            }
        }
    }

    private void sweep(int m, int n1, int kpc, int aStride, MemorySegment apSeg, MemorySegment bpSeg, MemorySegment cSeg,
                       MemorySegment tileSeg, long rangeBytes, long panelBytes, float[] c, int cOff, int ldc, int allFull,
                       int allPanels, int firstRow, boolean columns) {
        for (int ir = 0; ir < m; ir += MR) {
            int rows = Math.min(MR, m - ir);
            MemorySegment panel = apSeg.asSlice((long) ir * kpc * Integer.BYTES);
            MemorySegment next = apSeg.asSlice((long) (ir + MR < m ? ir + MR : 0) * kpc * Integer.BYTES);
            // a causal block's panel stops at its last row's bound (multiplyCausal); an odd bound on k would end
            // mid-pair, so that panel keeps the whole range
            int panelsB = allPanels, full = allFull, kpp = kpc;
            if (firstRow >= 0) {
                int bound = firstRow + ir + rows;
                if (columns) {
                    panelsB = Math.min(allPanels, (bound + NR - 1) / NR);
                    full = Math.min(allFull, panelsB);
                } else if ((bound & 1) == 0) {
                    kpp = Math.min(kpc, bound / 2);
                }
            }
            int t = 0;
            // a panel of at most 4 rows (the last of a 64-row block) runs the 4-row kernel
            boolean short4 = rows <= Bf16Kernel.SHORT_ROWS, direct = rows == MR || rows == Bf16Kernel.SHORT_ROWS;
            if (direct && full > 0 && rangeBytes == 0 && kpp == kp) {
                // the whole k range: the panels' pair rows lie back to back, so one call sweeps every full panel (the
                // call and its slices cost as much as a k = 64 tile's products otherwise)
                MemorySegment out = cSeg.asSlice((long) (cOff + ir * ldc) * Float.BYTES), pf = full == panelsB ? next : panel;
                if (short4) Bf16Kernel.runShort(panel, aStride, bpSeg, kpp, full, out, ldc, false, pf);
                else Bf16Kernel.run(panel, aStride, bpSeg, kpp, full, out, ldc, false, pf);
                t = full;
            }
            for (; t < panelsB; t++) {
                MemorySegment b = bpSeg.asSlice(t * panelBytes + rangeBytes);
                int cAt = cOff + ir * ldc + t * NR;
                MemorySegment pf = t == panelsB - 1 ? next : panel; // one call per B panel: the next A panel once
                if (direct && t < full) {
                    MemorySegment out = cSeg.asSlice((long) cAt * Float.BYTES);
                    if (short4) Bf16Kernel.runShort(panel, aStride, b, kpp, 1, out, ldc, false, pf);
                    else Bf16Kernel.run(panel, aStride, b, kpp, 1, out, ldc, false, pf);
                } else {
                    if (short4) Bf16Kernel.runShort(panel, aStride, b, kpp, 1, tileSeg, NR, false, pf);
                    else Bf16Kernel.run(panel, aStride, b, kpp, 1, tileSeg, NR, false, pf);
                    SgemmKernel.writeBack(tiles, 0, NR, c, cAt, ldc, 1f, 0f, rows, Math.min(NR, n1 - t * NR));
                }
            }
        }
    }
}
