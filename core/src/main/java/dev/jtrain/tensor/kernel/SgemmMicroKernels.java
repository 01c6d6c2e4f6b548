package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Sgemm.KC;
import static dev.jtrain.tensor.kernel.SgemmKernel.L;
import static dev.jtrain.tensor.kernel.SgemmKernel.NR;
import static dev.jtrain.tensor.kernel.SgemmKernel.S;

import jdk.incubator.vector.FloatVector;

/**
 * The unrolled MR x NR micro-kernels behind {@link SgemmKernel#kernel}: 12 rows for machines with 32 vector
 * registers (AVX-512), 6 rows for 16 (AVX2); each in two forms for the two packed-A layouts of
 * {@link SgemmPack} (p-major when A is stored transposed, row-major panel otherwise, so both packs are plain
 * copies). The bodies are regular by design: one B load per vector column, one broadcast + NV FMAs per row.
 *
 * <p>Threading: stateless.
 */
final class SgemmMicroKernels {
    private SgemmMicroKernels() {}

    /**
     * 6 x (2 vectors) tile: 12 accumulators + 2 B vectors + 1 broadcast register. Each k step loads
     * 2 vectors of the packed B micro-panel and broadcasts 6 values of the A micro-panel (p-major:
     * element (r, p) at {@code apOff + p * 6 + r}), then the accumulators are spilled to {@code tile}
     * (row-major, row stride NR) for {@link SgemmKernel#writeBack}.
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
            FloatVector a0 = FloatVector.broadcast(S, ap[ai]);
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

    /** As {@link #kernel6}, reading A from a row-major panel: element (r, p) at {@code apOff + r * KC + p}. */
    static void kernel6RowA(int kc, float[] ap, int apOff, float[] bp, int bpOff, float[] tile) {
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
            FloatVector a0 = FloatVector.broadcast(S, ap[ai]);
            c0_0 = a0.fma(b0, c0_0); c0_1 = a0.fma(b1, c0_1);
            FloatVector a1 = FloatVector.broadcast(S, ap[ai + KC]);
            c1_0 = a1.fma(b0, c1_0); c1_1 = a1.fma(b1, c1_1);
            FloatVector a2 = FloatVector.broadcast(S, ap[ai + 2 * KC]);
            c2_0 = a2.fma(b0, c2_0); c2_1 = a2.fma(b1, c2_1);
            FloatVector a3 = FloatVector.broadcast(S, ap[ai + 3 * KC]);
            c3_0 = a3.fma(b0, c3_0); c3_1 = a3.fma(b1, c3_1);
            FloatVector a4 = FloatVector.broadcast(S, ap[ai + 4 * KC]);
            c4_0 = a4.fma(b0, c4_0); c4_1 = a4.fma(b1, c4_1);
            FloatVector a5 = FloatVector.broadcast(S, ap[ai + 5 * KC]);
            c5_0 = a5.fma(b0, c5_0); c5_1 = a5.fma(b1, c5_1);
            ai += 1;
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
     * 12 x (2 vectors) tile: 24 accumulators + 2 B vectors + 1 broadcast register. Each k step loads
     * 2 vectors of the packed B micro-panel and broadcasts 12 values of the A micro-panel (p-major:
     * element (r, p) at {@code apOff + p * 12 + r}), then the accumulators are spilled to {@code tile}
     * (row-major, row stride NR) for {@link SgemmKernel#writeBack}.
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
            FloatVector a0 = FloatVector.broadcast(S, ap[ai]);
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

    /** As {@link #kernel12}, reading A from a row-major panel: element (r, p) at {@code apOff + r * KC + p}. */
    static void kernel12RowA(int kc, float[] ap, int apOff, float[] bp, int bpOff, float[] tile) {
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
            FloatVector a0 = FloatVector.broadcast(S, ap[ai]);
            c0_0 = a0.fma(b0, c0_0); c0_1 = a0.fma(b1, c0_1);
            FloatVector a1 = FloatVector.broadcast(S, ap[ai + KC]);
            c1_0 = a1.fma(b0, c1_0); c1_1 = a1.fma(b1, c1_1);
            FloatVector a2 = FloatVector.broadcast(S, ap[ai + 2 * KC]);
            c2_0 = a2.fma(b0, c2_0); c2_1 = a2.fma(b1, c2_1);
            FloatVector a3 = FloatVector.broadcast(S, ap[ai + 3 * KC]);
            c3_0 = a3.fma(b0, c3_0); c3_1 = a3.fma(b1, c3_1);
            FloatVector a4 = FloatVector.broadcast(S, ap[ai + 4 * KC]);
            c4_0 = a4.fma(b0, c4_0); c4_1 = a4.fma(b1, c4_1);
            FloatVector a5 = FloatVector.broadcast(S, ap[ai + 5 * KC]);
            c5_0 = a5.fma(b0, c5_0); c5_1 = a5.fma(b1, c5_1);
            FloatVector a6 = FloatVector.broadcast(S, ap[ai + 6 * KC]);
            c6_0 = a6.fma(b0, c6_0); c6_1 = a6.fma(b1, c6_1);
            FloatVector a7 = FloatVector.broadcast(S, ap[ai + 7 * KC]);
            c7_0 = a7.fma(b0, c7_0); c7_1 = a7.fma(b1, c7_1);
            FloatVector a8 = FloatVector.broadcast(S, ap[ai + 8 * KC]);
            c8_0 = a8.fma(b0, c8_0); c8_1 = a8.fma(b1, c8_1);
            FloatVector a9 = FloatVector.broadcast(S, ap[ai + 9 * KC]);
            c9_0 = a9.fma(b0, c9_0); c9_1 = a9.fma(b1, c9_1);
            FloatVector a10 = FloatVector.broadcast(S, ap[ai + 10 * KC]);
            c10_0 = a10.fma(b0, c10_0); c10_1 = a10.fma(b1, c10_1);
            FloatVector a11 = FloatVector.broadcast(S, ap[ai + 11 * KC]);
            c11_0 = a11.fma(b0, c11_0); c11_1 = a11.fma(b1, c11_1);
            ai += 1;
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
