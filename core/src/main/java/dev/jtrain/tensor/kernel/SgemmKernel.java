package dev.jtrain.tensor.kernel;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Register-tiled SGEMM micro-kernel selection and write-back (the innermost loop of Goto &amp; van de Geijn
 * 2008, "Anatomy of High-Performance Matrix Multiplication", and of BLIS). A kernel
 * ({@link SgemmMicroKernels}) computes an MR x NR block of C from a packed A micro-panel (MR x kc) and a
 * packed B micro-panel (kc x NR, element (p, j) at {@code bpOff + p * NR + j}): each k step loads NR/L vectors
 * of B, broadcasts MR values of A and issues MR * NR/L fused multiply-adds into accumulators that stay in
 * vector registers.
 *
 * <p>Why the shapes: Zen 4 has 32 vector registers; 12 x 2 vectors uses 24 accumulators + 2 B + 1 broadcast,
 * the largest tile that fits (fewer loads per FMA), and 6 x 2 fits the 16 registers of AVX2 machines. On the
 * Zen 4 the kernels alone run as fast with 256-bit as with 512-bit vectors (it splits a 512-bit op into two
 * halves), but the whole GEMM is slower with 256-bit: twice the instructions and half-width packing copies
 * (bench/MEASUREMENTS.md, "vector width"). Hence 512-bit wherever it is the preferred species.
 *
 * <p>On CPUs without AVX-512 the 6 x 16 tiles run on machine code instead ({@link SgemmMachineKernel#AVX2}, {@link #NATIVE}):
 * the Java kernel's A broadcasts compete with its FMAs for the FP pipes there. On AVX-512 CPUs the 12 x 32 tiles do
 * too ({@link SgemmMachineKernel#AVX512}): one call per A panel and block, C written from the registers, rather than a
 * spill and a Java write-back per tile. Same operations, same bits; {@code -Djtrain.sgemm.kernel=vector} keeps the
 * Java kernels.
 *
 * <p>Why the accumulators are spilled to {@code tile} instead of being written to C in the kernel: a kernel
 * that also holds the alpha/beta/edge write-back grows past what C1 can compile ("out of virtual registers"),
 * and tiered compilation then sometimes leaves it in C1 code, where every vector op allocates and the kernel runs
 * orders of magnitude slower. Spilling costs 24 vector stores and loads per 256-step panel against its 256 x 24
 * fused multiply-adds (bench/MEASUREMENTS.md, "micro-kernel write-back").
 *
 * <p>Threading: stateless; callers pass their own buffers.
 */
final class SgemmKernel {
    private SgemmKernel() {}

    /**
     * 512-bit on AVX-512 machines, else 256-bit; {@code -Djtrain.sgemm.vectorBits=256} (or
     * {@code -Djtrain.sgemm.kernel=native}, whose machine code is 256-bit) forces the narrow one.
     */
    static final VectorSpecies<Float> S = pickSpecies();
    /** Lanes per vector. */
    static final int L = S.length();
    /** Columns of a micro-tile: two vectors. */
    static final int NR = 2 * L;
    /** Rows of a micro-tile: 12 when 32 vector registers exist (AVX-512), else 6. */
    static final int MR = pickMr();
    /**
     * Whether the tiles run on machine code ({@link SgemmMachineKernel}) rather than the Vector API kernels: the
     * 6 x 16 tile on CPUs with AVX2 + FMA, the 12 x 32 one on CPUs with AVX-512F, unless
     * {@code -Djtrain.sgemm.kernel=vector}.
     */
    static final boolean NATIVE = resolveNative();
    private static final SgemmMachineKernel MACHINE = machineKernel();

    private static VectorSpecies<Float> pickSpecies() {
        int bits = KernelOptions.CURRENT.vectorBits();
        if (bits == 256 || KernelOptions.CURRENT.sgemmKernel() == KernelOptions.SgemmMode.NATIVE) return FloatVector.SPECIES_256;
        if (bits == 512) return FloatVector.SPECIES_512;
        return FloatVector.SPECIES_PREFERRED.length() >= 16 ? FloatVector.SPECIES_512 : FloatVector.SPECIES_256;
    }

    /** The machine code of this machine's tile, whether or not it runs here; null when there is none. */
    private static SgemmMachineKernel machineKernel() {
        if (SgemmMachineKernel.AVX512.fits(MR, NR)) return SgemmMachineKernel.AVX512;
        if (SgemmMachineKernel.AVX2.fits(MR, NR)) return SgemmMachineKernel.AVX2;
        return null;
    }

    private static boolean resolveNative() {
        KernelOptions.SgemmMode mode = KernelOptions.CURRENT.sgemmKernel();
        SgemmMachineKernel code = machineKernel();
        if (mode == KernelOptions.SgemmMode.VECTOR || code == null) return false;
        if (mode == KernelOptions.SgemmMode.NATIVE && !code.available()) {
            throw new IllegalArgumentException("jtrain.sgemm.kernel=native, but the " + code.isa + " SGEMM kernel cannot run here: "
                    + code.unavailableReason() + "; use auto (falls back to the Vector API) instead");
        }
        return code.available();
    }

    /** One line saying which fp32 micro-kernel runs on this machine. */
    static String backend() {
        SgemmMachineKernel code = machineKernel();
        if (NATIVE) return "fp32 matmuls: " + code.isa + " machine-code micro-kernel, " + MR + " x " + NR + " tiles";
        String why = KernelOptions.CURRENT.sgemmKernel() == KernelOptions.SgemmMode.VECTOR ? " (jtrain.sgemm.kernel=vector)"
                : code != null ? " (" + code.unavailableReason() + ")" : "";
        return "fp32 matmuls: Vector API micro-kernel, " + S.vectorBitSize() + "-bit, " + MR + " x " + NR + " tiles" + why;
    }

    /** With {@link #NATIVE}: the machine code of this machine's tile ({@link SgemmMachineKernel#run}). */
    static void runNative(MemorySegment ap, int apOff, int aStride, MemorySegment bp, int bpOff, int kc, int panels,
                          MemorySegment out, int outOff, int ldo, boolean accumulate) {
        MACHINE.run(ap, apOff, aStride, bp, bpOff, kc, panels, out, outOff, ldo, accumulate);
    }

    private static int pickMr() {
        if (KernelOptions.CURRENT.sgemmMr() != 0) return KernelOptions.CURRENT.sgemmMr();
        if (KernelOptions.CURRENT.sgemmKernel() == KernelOptions.SgemmMode.NATIVE) return 6;
        // AVX-512 (and only it) doubles the register file to 32; the preferred species tells us which we have.
        return FloatVector.SPECIES_PREFERRED.length() >= 16 ? 12 : 6;
    }

    /**
     * Runs the MR x NR micro-kernel selected for this machine on a packed A micro-panel ({@code rowA}: row-major
     * with row stride KC, else p-major) and a packed B micro-panel, leaving the product in {@code tile}.
     */
    static void kernel(boolean rowA, int kc, float[] ap, int apOff, float[] bp, int bpOff, float[] tile) {
        if (MR == 12) {
            if (rowA) SgemmMicroKernels.kernel12RowA(kc, ap, apOff, bp, bpOff, tile);
            else SgemmMicroKernels.kernel12(kc, ap, apOff, bp, bpOff, tile);
        } else {
            if (rowA) SgemmMicroKernels.kernel6RowA(kc, ap, apOff, bp, bpOff, tile);
            else SgemmMicroKernels.kernel6(kc, ap, apOff, bp, bpOff, tile);
        }
    }

    /**
     * {@code C[0:rows, 0:cols] = alpha * tile + beta * C}, reading C only when beta != 0 (so NaN garbage in an
     * output buffer is overwritten, as BLAS specifies).
     */
    static void writeBack(float[] tile, float[] c, int cOff, int ldc, float alpha, float beta, int rows, int cols) {
        writeBack(tile, 0, NR, c, cOff, ldc, alpha, beta, rows, cols);
    }

    /** As {@link #writeBack(float[], float[], int, int, float, float, int, int)}, from a tile at {@code tileOff} with rows {@code tileLd} apart. */
    static void writeBack(float[] tile, int tileOff, int tileLd, float[] c, int cOff, int ldc, float alpha, float beta,
                          int rows, int cols) {
        for (int r = 0; r < rows; r++) {
            int ci = cOff + r * ldc;
            int ti = tileOff + r * tileLd;
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
}
