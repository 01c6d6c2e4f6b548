package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16Gemm.MR;
import static dev.jtrain.tensor.kernel.Bf16Gemm.NR;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

import static jdk.incubator.vector.VectorOperators.LSHR;

/**
 * Packs fp32 blocks of op(A) and op(B) into the bf16 pair layouts the {@code vdpbf16ps} micro-kernel reads,
 * rounding each value to nearest even on the way (the conversion and the packing are one pass, so bf16 compute
 * costs no extra copy of the operands). A word holds two bf16 of consecutive k: element 2p in the low half,
 * 2p+1 in the high half; an odd last k is paired with zero, and ragged rows and columns are zero-padded so the
 * kernel always runs a full MR x NR tile.
 *
 * <pre>
 * packed A block: panel i (rows i*MR ..) = kp x MR words, word (p, r) at p * MR + r
 * packed B block: panel t (cols t*NR ..) = kp x NR words, word (p, j) at p * NR + j
 * </pre>
 *
 * <p>Threading: stateless; each thread packs into its own buffers.
 */
final class Bf16Pack {
    /** Sixteen lanes: the packing runs only where the AVX-512 kernel does. */
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    /** Lane indexes 0, 2, .., 30 and 1, 3, .., 31 of two concatenated vectors. */
    private static final IntVector EVEN = IntVector.fromArray(I, java.util.stream.IntStream.range(0, 16).map(i -> 2 * i).toArray(), 0);
    private static final IntVector ODD = EVEN.add(1);
    /** The first MR lanes: one k pair of a p-major A panel. */
    private static final VectorMask<Integer> MR_LANES = I.indexInRange(0, MR);

    private Bf16Pack() {}

    /**
     * Packs op(A)[i0 : i0+mc, p0 : p0+kc] into {@code ap}, ceil(mc/MR) panels of kp * MR words, in the layout that
     * makes the conversion contiguous. A stored m x k: row-major panels (row r at r * kp), each row converted in one
     * pass by {@link #rowToWords}; the kernel reads such a panel through row pointers. A stored k x m (transposed):
     * p-major panels (pair p at p * MR), since a word pairs two rows of A at one column and MR columns convert as
     * one masked vector. {@link #rowMajorA} tells the kernel which.
     */
    static void packA(boolean transA, float[] a, int aOff, int lda, int i0, int p0, int mc, int kc, int[] ap) {
        int kp = (kc + 1) / 2;
        for (int ip = 0, base = 0; ip < mc; ip += MR, base += kp * MR) {
            int rows = Math.min(MR, mc - ip);
            if (transA) {
                VectorMask<Float> in = F.indexInRange(0, rows);
                int src = aOff + p0 * lda + i0 + ip;
                int p = 0, dst = base;
                for (; p + 1 < kc; p += 2, dst += MR, src += 2 * lda) {
                    IntVector lo = Bf16.roundedHigh(load(a, src, in)).lanewise(LSHR, 16);
                    Bf16.roundedHigh(load(a, src + lda, in)).or(lo).intoArray(ap, dst, MR_LANES);
                }
                if (p < kc) Bf16.roundedHigh(load(a, src, in)).lanewise(LSHR, 16).intoArray(ap, dst, MR_LANES);
            } else {
                for (int r = 0; r < rows; r++) rowToWords(a, aOff + (i0 + ip + r) * lda + p0, kc, ap, base + r * kp);
                Arrays.fill(ap, base + rows * kp, base + MR * kp, 0);
            }
        }
    }

    /** Whether {@link #packA} lays out A's panels row-major (else p-major). */
    static boolean rowMajorA(boolean transA) {
        return !transA;
    }

    /**
     * Packs op(B)[p0 : p0+kc, j0 : j0+nc] into {@code bp}, ceil(nc/NR) panels of kp * NR words. B stored k x n: a
     * word pairs two rows of B at one column, 16 columns per vector. B stored n x k (transposed, as a linear layer's
     * weight): each row of B converts contiguously into {@code scratch}, then each k pair of the panel gathers its
     * words from 16 rows at a time ({@code vpgatherdd}; {@code gatherIndex} is 16 ints of scratch space).
     */
    static void packB(boolean transB, float[] b, int bOff, int ldb, int p0, int j0, int kc, int nc, int[] bp, int[] scratch,
                      int[] gatherIndex) {
        int kp = (kc + 1) / 2;
        for (int jp = 0, base = 0; jp < nc; jp += NR, base += kp * NR) {
            int cols = Math.min(NR, nc - jp);
            if (transB) {
                // each row of B converts contiguously; the panel then gathers 16 rows' words per k pair
                for (int j = 0; j < cols; j++) rowToWords(b, bOff + (j0 + jp + j) * ldb + p0, kc, scratch, j * kp);
                for (int j = cols; j < NR; j++) Arrays.fill(scratch, j * kp, (j + 1) * kp, 0);
                int[] rows = gatherIndex;
                for (int l = 0; l < I.length(); l++) rows[l] = l * kp;
                for (int q = 0, dst = base; q < kp; q++, dst += NR) {
                    for (int j = 0; j < NR; j += I.length()) {
                        IntVector.fromArray(I, scratch, q + j * kp, rows, 0).intoArray(bp, dst + j);
                    }
                }
            } else {
                for (int q = 0; q < NR; q += F.length()) {
                    VectorMask<Float> in = F.indexInRange(q, cols);
                    int src = bOff + p0 * ldb + j0 + jp + q;
                    int p = 0, dst = base + q;
                    for (; p + 1 < kc; p += 2, dst += NR, src += 2 * ldb) {
                        IntVector lo = Bf16.roundedHigh(load(b, src, in)).lanewise(LSHR, 16);
                        Bf16.roundedHigh(load(b, src + ldb, in)).or(lo).intoArray(bp, dst);
                    }
                    if (p < kc) Bf16.roundedHigh(load(b, src, in)).lanewise(LSHR, 16).intoArray(bp, dst);
                }
            }
        }
    }

    /**
     * Converts {@code kc} contiguous floats from {@code x[off]} into (kc + 1) / 2 pair words at {@code out[o]}: 32
     * floats per step, rounded as two vectors, their even and odd lanes then gathered into the low and high halves
     * of 16 words by two-vector permutes ({@code vpermt2d}).
     */
    static void rowToWords(float[] x, int off, int kc, int[] out, int o) {
        int p = 0, q = o;
        for (; p + 2 * F.length() <= kc; p += 2 * F.length(), q += F.length()) {
            IntVector h0 = Bf16.roundedHigh(FloatVector.fromArray(F, x, off + p).reinterpretAsInts());
            IntVector h1 = Bf16.roundedHigh(FloatVector.fromArray(F, x, off + p + F.length()).reinterpretAsInts());
            IntVector lo = EVEN.selectFrom(h0, h1).lanewise(LSHR, 16);
            ODD.selectFrom(h0, h1).or(lo).intoArray(out, q);
        }
        for (; p + 1 < kc; p += 2, q++) out[q] = Bf16.bits(x[off + p]) | Bf16.bits(x[off + p + 1]) << 16;
        if (p < kc) out[q] = Bf16.bits(x[off + p]);
    }

    /** The raw bits of 16 floats of {@code b} from {@code off}, lanes outside {@code in} zero. */
    private static IntVector load(float[] b, int off, VectorMask<Float> in) {
        return (in.allTrue() ? FloatVector.fromArray(F, b, off) : FloatVector.fromArray(F, b, off, in)).reinterpretAsInts();
    }
}
