package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16Gemm.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Packs fp32 blocks of op(A) and op(B) into the bf16 pair layouts the {@code vdpbf16ps} micro-kernel reads,
 * rounding each value to nearest even on the way (conversion and packing are one pass, so bf16 compute costs no
 * extra copy of the operands). A word holds two bf16 of consecutive k: element 2p in the low half, 2p+1 in the
 * high half; an odd last k is paired with zero, and ragged rows and columns are zero-padded so the kernel always
 * runs a full MR x NR tile.
 *
 * <pre>
 * packed A block: panel i (rows i*MR ..) = kp x MR words: row-major (word (r, p) at r * kp + p) when A is stored
 *                 m x k, p-major (word (p, r) at p * MR + r) when A is stored k x m; see {@link #rowMajorA}
 * packed B block: panel t (cols t*NR ..) = kp x NR words, word (p, j) at p * NR + j
 * </pre>
 * The conversions run natively ({@link Bf16Kernel#rows}, {@link Bf16Kernel#pairs}: {@code vcvtne2ps2bf16} and
 * {@code vcvtneps2bf16}, one or two instructions per 16 words, where the Vector API needs a dozen for the rounding
 * alone); what is left at the edges (an odd k, a row's last few pairs) is done here with {@link Bf16#bits}.
 *
 * <p>Threading: stateless; each thread packs into its own buffers.
 */
final class Bf16Pack {
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;

    private Bf16Pack() {}

    /** Whether {@link #packA} lays A's panels out row-major (else p-major). */
    static boolean rowMajorA(boolean transA) {
        return !transA;
    }

    /** Packs op(A)[i0 : i0+mc, p0 : p0+kc] into {@code ap} from {@code apOff}: ceil(mc/MR) panels of kp * MR words. */
    static void packA(boolean transA, float[] a, MemorySegment aSeg, int aOff, int lda, int i0, int p0, int mc, int kc,
                      int[] ap, MemorySegment apSeg, int apOff) {
        int kp = (kc + 1) / 2;
        for (int ip = 0, base = apOff; ip < mc; ip += MR, base += kp * MR) {
            int rows = Math.min(MR, mc - ip);
            if (transA) {
                // a word pairs rows 2p and 2p+1 of the stored A at one column: the panel's MR columns per k pair
                int src = aOff + p0 * lda + i0 + ip;
                Bf16Kernel.pairs(slice(aSeg, src, Float.BYTES), lda, slice(apSeg, base, Integer.BYTES), MR, kc / 2, 1,
                        (1 << rows) - 1);
                if ((kc & 1) != 0) {
                    for (int r = 0; r < rows; r++) ap[base + (kp - 1) * MR + r] = Bf16.bits(a[src + (kc - 1) * lda + r]);
                }
                if (rows < MR) {
                    for (int p = 0; p < kp; p++) Arrays.fill(ap, base + p * MR + rows, base + (p + 1) * MR, 0);
                }
            } else {
                rowsToWords(a, aSeg, aOff + (i0 + ip) * lda + p0, lda, rows, kc, ap, apSeg, base, kp);
                Arrays.fill(ap, base + rows * kp, base + MR * kp, 0);
            }
        }
    }

    /**
     * Packs op(B)[p0 : p0+kc, j0 : j0+nc] into {@code bp}, ceil(nc/NR) panels of kp * NR words. B stored k x n: a
     * word pairs rows 2p and 2p+1 of B at one column. B stored n x k (transposed, as a linear layer's weight): each
     * row of B converts in order into {@code scratch}, then each k pair of the panel gathers its words from 16 rows
     * at a time ({@code vpgatherdd}; {@code gatherIndex} is 16 ints of scratch space).
     */
    static void packB(boolean transB, float[] b, MemorySegment bSeg, int bOff, int ldb, int p0, int j0, int kc, int nc,
                      int[] bp, MemorySegment bpSeg, int[] scratch, MemorySegment scratchSeg, int[] gatherIndex) {
        int kp = (kc + 1) / 2;
        for (int jp = 0, base = 0; jp < nc; jp += NR, base += kp * NR) {
            int cols = Math.min(NR, nc - jp);
            if (transB) {
                rowsToWords(b, bSeg, bOff + (j0 + jp) * ldb + p0, ldb, cols, kc, scratch, scratchSeg, 0, kp);
                Arrays.fill(scratch, cols * kp, NR * kp, 0);
                int[] rows = gatherIndex;
                for (int l = 0; l < I.length(); l++) rows[l] = l * kp;
                for (int q = 0, dst = base; q < kp; q++, dst += NR) {
                    for (int j = 0; j < NR; j += I.length()) {
                        IntVector.fromArray(I, scratch, q + j * kp, rows, 0).intoArray(bp, dst + j);
                    }
                }
            } else {
                int src = bOff + p0 * ldb + j0 + jp;
                if (cols < NR) Arrays.fill(bp, base, base + kp * NR, 0);
                int groups = (cols + 15) / 16, last = cols - 16 * (groups - 1);
                Bf16Kernel.pairs(slice(bSeg, src, Float.BYTES), ldb, slice(bpSeg, base, Integer.BYTES), NR, kc / 2, groups,
                        (int) ((1L << last) - 1));
                if ((kc & 1) != 0) {
                    for (int j = 0; j < cols; j++) bp[base + (kp - 1) * NR + j] = Bf16.bits(b[src + (kc - 1) * ldb + j]);
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
    static void packBFromWords(int[] words, int ldb, int p0, int j0, int kc, int nc, int[] bp) {
        int kp = (kc + 1) / 2, rowWords = ldb / 2;
        for (int jp = 0, base = 0; jp < nc; jp += NR, base += kp * NR) {
            int cols = Math.min(NR, nc - jp);
            int col = (j0 + jp) / 2; // the panel's block starts at word row * rowWords + col
            for (int p = 0; p < kc / 2; p++) {
                int r0 = (p0 + 2 * p) * rowWords + col, r1 = r0 + rowWords, dst = base + p * NR;
                IntVector w0 = IntVector.fromArray(I, words, r0), w1 = IntVector.fromArray(I, words, r1);
                w0.and(0xFFFF).or(w1.lanewise(VectorOperators.LSHL, 16)).intoArray(bp, dst);
                w0.lanewise(VectorOperators.LSHR, 16).or(w1.and(0xFFFF0000)).intoArray(bp, dst + 16);
            }
            if ((kc & 1) != 0) { // the last k alone, paired with zero
                int r0 = (p0 + kc - 1) * rowWords + col, dst = base + (kp - 1) * NR;
                IntVector w0 = IntVector.fromArray(I, words, r0);
                w0.and(0xFFFF).intoArray(bp, dst);
                w0.lanewise(VectorOperators.LSHR, 16).intoArray(bp, dst + 16);
            }
            if (cols < NR) { // columns past n hold whatever the row's next block has: zero them
                for (int p = 0; p < kp; p++) Arrays.fill(bp, base + p * NR + cols, base + (p + 1) * NR, 0);
            }
        }
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

    private static MemorySegment slice(MemorySegment seg, int index, int bytes) {
        return seg.asSlice((long) index * bytes);
    }
}
