package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16Gemm.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Packs blocks of op(A) and op(B) into the bf16 pair layouts the {@code vdpbf16ps} micro-kernel reads: from fp32,
 * rounding each value to nearest even on the way (conversion and packing are one pass, so bf16 compute costs no
 * extra copy of the operands), from bf16 values ({@code short[]}), or from {@link Bf16#pack} words. A word holds two
 * bf16 of consecutive k: element 2p in the low half, 2p+1 in the high half; an odd last k is paired with zero, always
 * (a NaN or infinity times that zero would not be zero). The kernel always runs a full MR x NR tile; the rows of a
 * last A panel past m and the columns of a last B panel past n may hold whatever the buffer held, since an output
 * row depends only on its own A row and an output column on its own B column, and those outputs are never written
 * back (some packers zero them anyway, where it costs nothing).
 *
 * <pre>
 * packed A block: panel i (rows i*MR ..) = kp x MR words: row-major (word (r, p) at r * kp + p) when A is stored
 *                 m x k, p-major (word (p, r) at p * MR + r) when A is stored k x m; see {@link #rowMajorA}
 * packed B block: panel t (cols t*NR ..) = kp x NR words, word (p, j) at p * NR + j
 * </pre>
 * The conversions run natively ({@link Bf16Kernel#rows}, {@link Bf16Kernel#pairs}, {@link Bf16Kernel#pairsA},
 * {@link Bf16Kernel#cols}:
 * {@code vcvtne2ps2bf16} and {@code vcvtneps2bf16}, one or two instructions per 16 words, where the Vector API needs
 * a dozen for the rounding alone); what is left at the edges (an odd k, a row's last few pairs, a narrow panel's
 * last columns) is done here with {@link Bf16#bits}.
 *
 * <p>Threading: stateless; each thread packs into its own buffers.
 */
final class Bf16Pack {
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final java.nio.ByteOrder ORDER = java.nio.ByteOrder.nativeOrder();

    private Bf16Pack() {}

    /** Whether {@link #packA} lays A's panels out row-major (else p-major). */
    static boolean rowMajorA(boolean transA) {
        return !transA;
    }

    /**
     * Packs op(A)[i0 : i0+mc, p0 : p0+kc] into {@code ap} from {@code apOff}: ceil(mc/MR) panels of kp * MR words,
     * A stored m x k through {@link Bf16Kernel#rows}, A stored k x m through {@link Bf16Kernel#pairsA}.
     */
    static void packA(boolean transA, float[] a, MemorySegment aSeg, int aOff, int lda, int i0, int p0, int mc, int kc,
                      int[] ap, MemorySegment apSeg, int apOff) {
        int kp = (kc + 1) / 2, panelWords = kp * MR;
        if (transA) {
            // a word pairs rows 2p and 2p+1 of the stored A at one column, a panel takes MR columns: every panel in
            // one pass, two rows of the block at a time (gen_bf16_pairs_a.py says why)
            int src = aOff + p0 * lda + i0, panels = (mc + MR - 1) / MR, rows = mc - MR * (panels - 1);
            Bf16Kernel.pairsA(slice(aSeg, src, Float.BYTES), lda, slice(apSeg, apOff, Integer.BYTES), kc / 2, panels,
                    (1 << rows) - 1, panelWords);
            if ((kc & 1) != 0) {
                for (int r = 0; r < mc; r++) {
                    ap[apOff + r / MR * panelWords + (kp - 1) * MR + r % MR] = Bf16.bits(a[src + (kc - 1) * lda + r]);
                }
            }
            if (rows < MR) {
                int base = apOff + (panels - 1) * panelWords;
                for (int p = 0; p < kp; p++) Arrays.fill(ap, base + p * MR + rows, base + (p + 1) * MR, 0);
            }
            return;
        }
        // row-major panels of kp words per row are just the block's rows, kp words apart: one pass over all of them
        rowsToWords(a, aSeg, aOff + i0 * lda + p0, lda, mc, kc, ap, apSeg, apOff, kp);
        int rows = mc - MR * ((mc - 1) / MR); // in the last panel; the rest of it is zero
        Arrays.fill(ap, apOff + mc * kp, apOff + (mc - rows + MR) * kp, 0);
    }

    /**
     * Packs op(B)[p0 : p0+kc, j0 : j0+nc] into {@code bp}, ceil(nc/NR) panels of kp * NR words. B stored k x n: a
     * word pairs rows 2p and 2p+1 of B at one column ({@link Bf16Kernel#pairs}). B stored n x k (transposed, as a
     * linear layer's weight): a word pairs two consecutive values of one row, and a panel row takes one word from
     * each of 32 rows ({@link Bf16Kernel#cols}, a transpose in registers).
     */
    static void packB(boolean transB, float[] b, MemorySegment bSeg, int bOff, int ldb, int p0, int j0, int kc, int nc,
                      MemorySegment bpSeg) {
        packB(transB, b, bSeg, bOff, ldb, p0, j0, kc, nc, bpSeg, (kc + 1) / 2);
    }

    /**
     * {@link #packB} into panels of {@code kpRows} pair rows (at least kp): the rows past kp are zero, as the AMX
     * kernel's whole k blocks need ({@link Bf16AmxPack}).
     */
    static void packB(boolean transB, float[] b, MemorySegment bSeg, int bOff, int ldb, int p0, int j0, int kc, int nc,
                      MemorySegment bpSeg, int kpRows) {
        int kp = (kc + 1) / 2, panelWords = kpRows * NR;
        zeroPadRows(bpSeg, kp, kpRows, (nc + NR - 1) / NR);
        if (!transB) {
            // every panel in one pass, two rows of the block at a time (gen_bf16_pairs.py says why)
            int src = bOff + p0 * ldb + j0;
            int groups = (nc + 15) / 16, last = nc - 16 * (groups - 1);
            // a last panel's columns past nc keep what the buffer held: only their own columns of C depend on
            // them, and those are never written back (Bf16Workspace.multiply)
            Bf16Kernel.pairs(slice(bSeg, src, Float.BYTES), ldb, bpSeg, NR, kc / 2, groups, (int) ((1L << last) - 1),
                    panelWords);
            if ((kc & 1) != 0) {
                for (int j = 0; j < nc; j++) {
                    set(bpSeg, j / NR * panelWords + (kp - 1) * NR + j % NR, Bf16.bits(b[src + (kc - 1) * ldb + j]));
                }
            }
            return;
        }
        // B stored n x k: 16 x 16 words at a time natively, converted and transposed in registers; what that leaves
        // (pairs past the last 16, and columns past the last 16 of a narrow panel) here
        int blocks = kc / 32;
        for (int jp = 0, base = 0; jp < nc; jp += NR, base += panelWords) {
            int cols = Math.min(NR, nc - jp), halves = blocks > 0 ? cols / 16 : 0;
            int src = bOff + (j0 + jp) * ldb + p0;
            if (halves > 0) {
                Bf16Kernel.cols(slice(bSeg, src, Float.BYTES), ldb, slice(bpSeg, base, Integer.BYTES), blocks, halves);
            }
            for (int j = 0; j < cols; j++) {
                int row = src + j * ldb;
                for (int p = j < 16 * halves ? 16 * blocks : 0; p < kp; p++) {
                    int q = 2 * p;
                    set(bpSeg, base + p * NR + j, Bf16.bits(b[row + q]) | (q + 1 < kc ? Bf16.bits(b[row + q + 1]) << 16 : 0));
                }
            }
        }
    }

    /** Floats per {@link Bf16#pack} block that {@link #packBFromWords} reads: one block per 32-column B panel. */
    static final int WORDS_BLOCK = 32;

    /**
     * {@link #packB} of a B stored k x n (not transposed) from the bf16 words {@link Bf16#pack} made of it, rows
     * {@code ldb} floats apart ({@code ldb} and {@code j0} multiples of 32, blocks of 32 floats). A pack block holds
     * elements i and i + 16 of 32 in word i, so the panel words of rows 2p and 2p+1 at the block's 32 columns are
     * lane-wise: low halves of row 2p with row 2p+1's shifted up (columns 0-15), and high halves of row 2p shifted
     * down with row 2p+1's (columns 16-31). No shuffle, and the bf16 values are the ones rounding B would give.
     */
    static void packBFromWords(int[] words, int ldb, int p0, int j0, int kc, int nc, MemorySegment bp, int kpRows) {
        int kp = (kc + 1) / 2, rowWords = ldb / 2, panelWords = kpRows * NR, panels = (nc + NR - 1) / NR;
        zeroPadRows(bp, kp, kpRows, panels);
        // two whole rows at a time, into every panel (gen_bf16_pairs.py says why); panel t's block starts at word
        // row * rowWords + j0 / 2 + 16 t
        for (int p = 0; p < kc / 2; p++) {
            int r0 = (p0 + 2 * p) * rowWords + j0 / 2, r1 = r0 + rowWords;
            for (int t = 0, dst = p * NR; t < panels; t++, dst += panelWords, r0 += 16, r1 += 16) {
                IntVector w0 = IntVector.fromArray(I, words, r0), w1 = IntVector.fromArray(I, words, r1);
                w0.and(0xFFFF).or(w1.lanewise(VectorOperators.LSHL, 16)).intoMemorySegment(bp, 4L * dst, ORDER);
                w0.lanewise(VectorOperators.LSHR, 16).or(w1.and(0xFFFF0000)).intoMemorySegment(bp, 4L * (dst + 16), ORDER);
            }
        }
        if ((kc & 1) != 0) { // the last k alone, paired with zero
            int r0 = (p0 + kc - 1) * rowWords + j0 / 2;
            for (int t = 0, dst = (kp - 1) * NR; t < panels; t++, dst += panelWords, r0 += 16) {
                IntVector w0 = IntVector.fromArray(I, words, r0);
                w0.and(0xFFFF).intoMemorySegment(bp, 4L * dst, ORDER);
                w0.lanewise(VectorOperators.LSHR, 16).intoMemorySegment(bp, 4L * (dst + 16), ORDER);
            }
        }
        int cols = nc - (panels - 1) * NR, base = (panels - 1) * panelWords;
        if (cols < NR) { // columns past n hold whatever the row's next block has: zero them
            for (int p = 0; p < kp; p++) zero(bp, base + p * NR + cols, base + (p + 1) * NR);
        }
    }

    /**
     * {@link #packA} from bf16 values ({@code short[]}, a row-major matrix with rows {@code lda} values apart): nothing
     * to round, so A stored m x k is packed by copying each row's values, which already sit in pairs along k, and A
     * stored k x m by pairing two rows' values at each column ({@link #pairRows}).
     */
    static void packABf16(boolean transA, short[] a, MemorySegment aSeg, int aOff, int lda, int i0, int p0, int mc, int kc,
                          int[] ap, MemorySegment apSeg, int apOff) {
        int kp = (kc + 1) / 2, panelWords = kp * MR, panels = (mc + MR - 1) / MR;
        if (!transA) {
            for (int r = 0; r < mc; r++) {
                int src = aOff + (i0 + r) * lda + p0, dst = apOff + r * kp;
                MemorySegment.copy(aSeg, (long) src * Short.BYTES, apSeg, (long) dst * Integer.BYTES, (long) kc * Short.BYTES);
                if ((kc & 1) != 0) ap[dst + kp - 1] &= 0xFFFF; // the odd last k, paired with zero
            }
            // a last panel's rows past mc keep what the buffer held: only their own rows of C depend on them, and
            // those are never written back (Bf16Workspace.multiply)
            return;
        }
        for (int t = 0; t < panels; t++) {
            int rows = Math.min(MR, mc - t * MR), col = aOff + p0 * lda + i0 + t * MR, base = apOff + t * panelWords;
            for (int p = 0; p < kp; p++, col += 2 * lda) {
                pairRows(a, col, 2 * p + 1 < kc ? col + lda : -1, rows, MR, apSeg, base + p * MR);
            }
        }
    }

    /**
     * {@link #packB} from bf16 values ({@code short[]}, rows {@code ldb} values apart). B stored k x n: a word pairs
     * rows 2p and 2p+1 at one column ({@link #pairRows}). B stored n x k: a word is two consecutive values of one row,
     * already paired, so a panel row takes one from each of 32 rows: a transpose, done word by word.
     */
    static void packBBf16(boolean transB, short[] b, MemorySegment bSeg, int bOff, int ldb, int p0, int j0, int kc, int nc,
                          MemorySegment bp, int kpRows) {
        int kp = (kc + 1) / 2, panelWords = kpRows * NR;
        zeroPadRows(bp, kp, kpRows, (nc + NR - 1) / NR);
        for (int jp = 0, base = 0; jp < nc; jp += NR, base += panelWords) {
            int cols = Math.min(NR, nc - jp);
            if (!transB) {
                int col = bOff + p0 * ldb + j0 + jp;
                for (int p = 0; p < kp; p++, col += 2 * ldb) {
                    int hi = 2 * p + 1 < kc ? col + ldb : -1, dst = base + p * NR;
                    pairRows(b, col, hi, Math.min(16, cols), 16, bp, dst);
                    pairRows(b, col + 16, hi < 0 ? -1 : hi + 16, Math.max(0, cols - 16), 16, bp, dst + 16);
                }
                continue;
            }
            // column by column of the panel, each one row of B read in order (measured faster than writing the
            // panel's rows in order, or tiles of 16 words x 32 rows: bench/MEASUREMENTS.md, "Operands held in bf16")
            int whole = kc / 2;
            for (int j = 0; j < cols; j++) {
                long row = (long) (bOff + (j0 + jp + j) * ldb + p0) * Short.BYTES;
                for (int p = 0; p < whole; p++) set(bp, base + p * NR + j, bSeg.get(ValueLayout.JAVA_INT_UNALIGNED, row + 4L * p));
                if (whole < kp) set(bp, base + whole * NR + j, bSeg.get(ValueLayout.JAVA_SHORT_UNALIGNED, row + 4L * whole) & 0xFFFF);
            }
            if (cols < NR) for (int p = 0; p < kp; p++) zero(bp, base + p * NR + cols, base + (p + 1) * NR);
        }
    }

    private static final VectorSpecies<Short> S = ShortVector.SPECIES_256;

    /**
     * {@code dst[d + j] = x[lo + j] | x[hi + j] << 16} for j &lt; {@code count} (no high half when {@code hi} is -1), and
     * zero for count &lt;= j &lt; {@code width}; width is at most 16 words, one vector.
     */
    private static void pairRows(short[] x, int lo, int hi, int count, int width, MemorySegment dst, int d) {
        VectorMask<Short> in = S.indexInRange(0, count);
        IntVector w = (IntVector) ShortVector.fromArray(S, x, lo, in).convertShape(VectorOperators.ZERO_EXTEND_S2I, I, 0);
        if (hi >= 0) {
            w = w.or(((IntVector) ShortVector.fromArray(S, x, hi, in).convertShape(VectorOperators.ZERO_EXTEND_S2I, I, 0))
                    .lanewise(VectorOperators.LSHL, 16));
        }
        if (width == 16) w.intoMemorySegment(dst, 4L * d, ORDER);
        else w.intoMemorySegment(dst, 4L * d, ORDER, I.indexInRange(0, width));
    }

    /**
     * {@code rows} rows of {@code kc} floats ({@code x[off]}, {@code ld} apart) into rows of kp = (kc + 1) / 2 pair
     * words at {@code out[o]}, {@code kp} apart: natively in groups of 32 floats, the rest (under 32) here.
     */
    static void rowsToWords(float[] x, MemorySegment xSeg, int off, int ld, int rows, int kc, int[] out,
                            MemorySegment outSeg, int o, int kp) {
        int groups = kc / 32;
        if (groups > 0) Bf16Kernel.rows(slice(xSeg, off, Float.BYTES), ld, slice(outSeg, o, Integer.BYTES), kp, rows, groups);
        for (int r = 0; r < rows; r++) {
            int src = off + r * ld, dst = o + r * kp;
            int p = 32 * groups, q = dst + 16 * groups;
            for (; p + 1 < kc; p += 2, q++) out[q] = Bf16.bits(x[src + p]) | Bf16.bits(x[src + p + 1]) << 16;
            if (p < kc) out[q] = Bf16.bits(x[src + p]);
        }
    }

    /** Zeroes pair rows [kp, kpRows) of each of {@code panels} B panels of kpRows x NR words. */
    private static void zeroPadRows(MemorySegment bp, int kp, int kpRows, int panels) {
        if (kpRows == kp) return;
        for (int t = 0; t < panels; t++) zero(bp, (t * kpRows + kp) * NR, (t + 1) * kpRows * NR);
    }

    /** Words [from, to) of a packed buffer (on the heap or off it) set to zero. */
    static void zero(MemorySegment buf, int from, int to) {
        if (to > from) buf.asSlice(4L * from, 4L * (to - from)).fill((byte) 0);
    }

    /** Word {@code index} of a packed buffer (on the heap or off it). */
    static void set(MemorySegment buf, int index, int word) {
        buf.setAtIndex(ValueLayout.JAVA_INT, index, word);
    }

    static MemorySegment slice(MemorySegment seg, int index, int bytes) {
        return seg.asSlice((long) index * bytes);
    }
}
