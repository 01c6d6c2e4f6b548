package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Register-tiled SGEMM micro-kernels (the innermost loop of Goto &amp; van de Geijn 2008, "Anatomy of
 * High-Performance Matrix Multiplication", and of BLIS). A kernel computes an MR x NR block of C from a packed
 * A micro-panel (MR x kc, element (r, p) at {@code apOff + p * MR + r}) and a packed B micro-panel (kc x NR,
 * element (p, j) at {@code bpOff + p * NR + j}): each k step loads NR/L vectors of B, broadcasts MR values of A
 * and issues MR * NR/L fused multiply-adds into accumulators that stay in vector registers.
 *
 * <p>Why the shapes: Zen 4 has 32 vector registers; 12 x 2 vectors uses 24 accumulators + 2 B + 1 broadcast,
 * the largest tile that fits (fewer loads per FMA), and 6 x 2 fits the 16 registers of AVX2 machines. On the
 * Zen 4 here both reach ~115 GFLOP/s per core on L2-resident panels, 512-bit and 256-bit alike (Zen 4 splits a
 * 512-bit op into two 256-bit halves, so the wider species only halves the instruction count).
 *
 * <p>Why the accumulators are spilled to {@code tile} instead of being written to C in the kernel: a kernel
 * that also holds the alpha/beta/edge write-back grows past what C1 can compile ("out of virtual registers"),
 * and tiered compilation then sometimes leaves it in C1 code, where every vector op allocates (measured 100x
 * slower). Spilling 24 vectors per 256-step panel costs well under 1%.
 *
 * <p>Threading: stateless; callers pass their own buffers.
 */
final class SgemmKernel {
    private SgemmKernel() {}

    /** 512-bit on AVX-512 machines, else 256-bit; {@code -Djtrain.sgemm.vectorBits=256} forces the narrow one. */
    static final VectorSpecies<Float> S = pickSpecies();
    /** Lanes per vector. */
    static final int L = S.length();
    /** Columns of a micro-tile: two vectors. */
    static final int NR = 2 * L;
    /** Rows of a micro-tile: 12 when 32 vector registers exist (AVX-512), else 6. */
    static final int MR = pickMr();

    private static VectorSpecies<Float> pickSpecies() {
        String bits = System.getProperty("jtrain.sgemm.vectorBits", "");
        if (bits.equals("256")) return FloatVector.SPECIES_256;
        if (bits.equals("512")) return FloatVector.SPECIES_512;
        return FloatVector.SPECIES_PREFERRED.length() >= 16 ? FloatVector.SPECIES_512 : FloatVector.SPECIES_256;
    }

    private static int pickMr() {
        String mr = System.getProperty("jtrain.sgemm.mr", "");
        if (mr.equals("6") || mr.equals("12")) return Integer.parseInt(mr);
        // AVX-512 (and only it) doubles the register file to 32; the preferred species tells us which we have.
        return FloatVector.SPECIES_PREFERRED.length() >= 16 ? 12 : 6;
    }

    /** Runs the MR x NR micro-kernel selected for this machine. */
    static void kernel(int kc, float[] ap, int apOff, float[] bp, int bpOff, float[] tile) {
        if (MR == 12) kernel12(kc, ap, apOff, bp, bpOff, tile);
        else kernel6(kc, ap, apOff, bp, bpOff, tile);
    }

    /**
     * {@code C[0:rows, 0:cols] = alpha * tile + beta * C}, reading C only when beta != 0 (so NaN garbage in an
     * output buffer is overwritten, as BLAS specifies).
     */
    static void writeBack(float[] tile, float[] c, int cOff, int ldc, float alpha, float beta, int rows, int cols) {
        for (int r = 0; r < rows; r++) {
            int ci = cOff + r * ldc;
            int ti = r * NR;
            for (int j = 0; j < cols; j += L) {
                FloatVector t = FloatVector.fromArray(S, tile, ti + j).mul(alpha);
                if (cols - j >= L) {
                    if (beta != 0f) t = FloatVector.fromArray(S, c, ci + j).fma(FloatVector.broadcast(S, beta), t);
                    t.intoArray(c, ci + j);
                } else {
                    VectorMask<Float> m = S.indexInRange(j, cols);
                    if (beta != 0f) t = FloatVector.fromArray(S, c, ci + j, m).fma(FloatVector.broadcast(S, beta), t);
                    t.intoArray(c, ci + j, m);
                }
            }
        }
    }

    /**
     * 6 x (2 vectors) tile: 12 accumulators + 2 B vectors + 1 broadcast register. Loads 2 vectors of
     * the packed B micro-panel and broadcasts 6 packed A values per k step, then spills the accumulators to
     * {@code tile} (row-major, stride NR) for {@link #writeBack}.
     */
    static void kernel6(int kc, float[] ap, int apOff, float[] bp, int bpOff, float[] tile) {
        FloatVector c0_0 = FloatVector.zero(S); FloatVector c0_1 = FloatVector.zero(S);
        FloatVector c1_0 = FloatVector.zero(S); FloatVector c1_1 = FloatVector.zero(S);
        FloatVector c2_0 = FloatVector.zero(S); FloatVector c2_1 = FloatVector.zero(S);
        FloatVector c3_0 = FloatVector.zero(S); FloatVector c3_1 = FloatVector.zero(S);
        FloatVector c4_0 = FloatVector.zero(S); FloatVector c4_1 = FloatVector.zero(S);
        FloatVector c5_0 = FloatVector.zero(S); FloatVector c5_1 = FloatVector.zero(S);
        int ai = apOff, bi = bpOff;
        for (int p = 0; p < kc; p++) {
            FloatVector b0 = FloatVector.fromArray(S, bp, bi);
            FloatVector b1 = FloatVector.fromArray(S, bp, bi + 1 * L);
            FloatVector a0 = FloatVector.broadcast(S, ap[ai + 0]);
            c0_0 = a0.fma(b0, c0_0); c0_1 = a0.fma(b1, c0_1);
            FloatVector a1 = FloatVector.broadcast(S, ap[ai + 1]);
            c1_0 = a1.fma(b0, c1_0); c1_1 = a1.fma(b1, c1_1);
            FloatVector a2 = FloatVector.broadcast(S, ap[ai + 2]);
            c2_0 = a2.fma(b0, c2_0); c2_1 = a2.fma(b1, c2_1);
            FloatVector a3 = FloatVector.broadcast(S, ap[ai + 3]);
            c3_0 = a3.fma(b0, c3_0); c3_1 = a3.fma(b1, c3_1);
            FloatVector a4 = FloatVector.broadcast(S, ap[ai + 4]);
            c4_0 = a4.fma(b0, c4_0); c4_1 = a4.fma(b1, c4_1);
            FloatVector a5 = FloatVector.broadcast(S, ap[ai + 5]);
            c5_0 = a5.fma(b0, c5_0); c5_1 = a5.fma(b1, c5_1);
            ai += 6;
            bi += NR;
        }
        c0_0.intoArray(tile, 0 * NR); c0_1.intoArray(tile, 0 * NR + 1 * L);
        c1_0.intoArray(tile, 1 * NR); c1_1.intoArray(tile, 1 * NR + 1 * L);
        c2_0.intoArray(tile, 2 * NR); c2_1.intoArray(tile, 2 * NR + 1 * L);
        c3_0.intoArray(tile, 3 * NR); c3_1.intoArray(tile, 3 * NR + 1 * L);
        c4_0.intoArray(tile, 4 * NR); c4_1.intoArray(tile, 4 * NR + 1 * L);
        c5_0.intoArray(tile, 5 * NR); c5_1.intoArray(tile, 5 * NR + 1 * L);
    }

    /**
     * 12 x (2 vectors) tile: 24 accumulators + 2 B vectors + 1 broadcast register. Loads 2 vectors of
     * the packed B micro-panel and broadcasts 12 packed A values per k step, then spills the accumulators to
     * {@code tile} (row-major, stride NR) for {@link #writeBack}.
     */
    static void kernel12(int kc, float[] ap, int apOff, float[] bp, int bpOff, float[] tile) {
        FloatVector c0_0 = FloatVector.zero(S); FloatVector c0_1 = FloatVector.zero(S);
        FloatVector c1_0 = FloatVector.zero(S); FloatVector c1_1 = FloatVector.zero(S);
        FloatVector c2_0 = FloatVector.zero(S); FloatVector c2_1 = FloatVector.zero(S);
        FloatVector c3_0 = FloatVector.zero(S); FloatVector c3_1 = FloatVector.zero(S);
        FloatVector c4_0 = FloatVector.zero(S); FloatVector c4_1 = FloatVector.zero(S);
        FloatVector c5_0 = FloatVector.zero(S); FloatVector c5_1 = FloatVector.zero(S);
        FloatVector c6_0 = FloatVector.zero(S); FloatVector c6_1 = FloatVector.zero(S);
        FloatVector c7_0 = FloatVector.zero(S); FloatVector c7_1 = FloatVector.zero(S);
        FloatVector c8_0 = FloatVector.zero(S); FloatVector c8_1 = FloatVector.zero(S);
        FloatVector c9_0 = FloatVector.zero(S); FloatVector c9_1 = FloatVector.zero(S);
        FloatVector c10_0 = FloatVector.zero(S); FloatVector c10_1 = FloatVector.zero(S);
        FloatVector c11_0 = FloatVector.zero(S); FloatVector c11_1 = FloatVector.zero(S);
        int ai = apOff, bi = bpOff;
        for (int p = 0; p < kc; p++) {
            FloatVector b0 = FloatVector.fromArray(S, bp, bi);
            FloatVector b1 = FloatVector.fromArray(S, bp, bi + 1 * L);
            FloatVector a0 = FloatVector.broadcast(S, ap[ai + 0]);
            c0_0 = a0.fma(b0, c0_0); c0_1 = a0.fma(b1, c0_1);
            FloatVector a1 = FloatVector.broadcast(S, ap[ai + 1]);
            c1_0 = a1.fma(b0, c1_0); c1_1 = a1.fma(b1, c1_1);
            FloatVector a2 = FloatVector.broadcast(S, ap[ai + 2]);
            c2_0 = a2.fma(b0, c2_0); c2_1 = a2.fma(b1, c2_1);
            FloatVector a3 = FloatVector.broadcast(S, ap[ai + 3]);
            c3_0 = a3.fma(b0, c3_0); c3_1 = a3.fma(b1, c3_1);
            FloatVector a4 = FloatVector.broadcast(S, ap[ai + 4]);
            c4_0 = a4.fma(b0, c4_0); c4_1 = a4.fma(b1, c4_1);
            FloatVector a5 = FloatVector.broadcast(S, ap[ai + 5]);
            c5_0 = a5.fma(b0, c5_0); c5_1 = a5.fma(b1, c5_1);
            FloatVector a6 = FloatVector.broadcast(S, ap[ai + 6]);
            c6_0 = a6.fma(b0, c6_0); c6_1 = a6.fma(b1, c6_1);
            FloatVector a7 = FloatVector.broadcast(S, ap[ai + 7]);
            c7_0 = a7.fma(b0, c7_0); c7_1 = a7.fma(b1, c7_1);
            FloatVector a8 = FloatVector.broadcast(S, ap[ai + 8]);
            c8_0 = a8.fma(b0, c8_0); c8_1 = a8.fma(b1, c8_1);
            FloatVector a9 = FloatVector.broadcast(S, ap[ai + 9]);
            c9_0 = a9.fma(b0, c9_0); c9_1 = a9.fma(b1, c9_1);
            FloatVector a10 = FloatVector.broadcast(S, ap[ai + 10]);
            c10_0 = a10.fma(b0, c10_0); c10_1 = a10.fma(b1, c10_1);
            FloatVector a11 = FloatVector.broadcast(S, ap[ai + 11]);
            c11_0 = a11.fma(b0, c11_0); c11_1 = a11.fma(b1, c11_1);
            ai += 12;
            bi += NR;
        }
        c0_0.intoArray(tile, 0 * NR); c0_1.intoArray(tile, 0 * NR + 1 * L);
        c1_0.intoArray(tile, 1 * NR); c1_1.intoArray(tile, 1 * NR + 1 * L);
        c2_0.intoArray(tile, 2 * NR); c2_1.intoArray(tile, 2 * NR + 1 * L);
        c3_0.intoArray(tile, 3 * NR); c3_1.intoArray(tile, 3 * NR + 1 * L);
        c4_0.intoArray(tile, 4 * NR); c4_1.intoArray(tile, 4 * NR + 1 * L);
        c5_0.intoArray(tile, 5 * NR); c5_1.intoArray(tile, 5 * NR + 1 * L);
        c6_0.intoArray(tile, 6 * NR); c6_1.intoArray(tile, 6 * NR + 1 * L);
        c7_0.intoArray(tile, 7 * NR); c7_1.intoArray(tile, 7 * NR + 1 * L);
        c8_0.intoArray(tile, 8 * NR); c8_1.intoArray(tile, 8 * NR + 1 * L);
        c9_0.intoArray(tile, 9 * NR); c9_1.intoArray(tile, 9 * NR + 1 * L);
        c10_0.intoArray(tile, 10 * NR); c10_1.intoArray(tile, 10 * NR + 1 * L);
        c11_0.intoArray(tile, 11 * NR); c11_1.intoArray(tile, 11 * NR + 1 * L);
    }
}
