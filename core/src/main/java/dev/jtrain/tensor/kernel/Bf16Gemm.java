package dev.jtrain.tensor.kernel;

import java.lang.foreign.MemorySegment;

/**
 * GEMM with bf16 compute on fp32 arrays: {@code C = alpha * op(A) * op(B) + beta * C} as in {@link Sgemm}, with
 * op(A) and op(B) rounded to bf16 (nearest even) as they are packed, their products summed in fp32 by the CPU's
 * {@code vdpbf16ps}, and C kept in fp32. This is what {@code torch.autocast("cpu", torch.bfloat16)} asks of
 * oneDNN for a matmul, minus the bf16 output: the result is left in fp32 and a caller rounds it where it stores
 * bf16. Error: each product carries at most ~2 * 2^-8 relative error from its rounded factors, the sum the usual
 * fp32 k * 2^-24, so |C - exact| &lt;= (2^-7 + k * 2^-24) * sum |a||b|; Bf16GemmTest holds it to twice the sum's
 * share, (2^-7 + k * 2^-23) * sum |a||b|, which a lost pair or a missing rounding still exceeds. Operands may
 * also come as bf16 values ({@code short[]}) or as B's {@link Bf16#pack} words; whatever the source, the same values
 * give the same bits ({@link Bf16Operands}).
 *
 * <p>Paths, decided by the machine and the shape alone:
 * <ul>
 *   <li>the AMX micro-kernel ({@link Bf16AmxKernel}, 32 x 32 blocks of C from tile registers) inside the loop nest
 *       of {@link Bf16AmxWorkspace}, where the CPU has AMX-BF16 and Linux grants its tile state (Sapphire Rapids
 *       and later);
 *   <li>the AVX512_BF16 micro-kernel ({@link Bf16Kernel}) inside the BLIS loop nest of {@link Bf16Workspace}, where
 *       the CPU has AVX512_BF16 but no AMX (Zen 4 and 5, Cooper Lake), or with {@code jtrain.bf16.kernel=avx512};
 *   <li>on a CPU without it, or with {@code jtrain.bf16.kernel=fp32} ({@link Bf16Fallback}): the operands rounded to
 *       bf16 in the same way, multiplied by {@link Sgemm} in fp32 (bf16 storage, fp32 compute; not faster,
 *       {@link #backend()} says so). The values are a bf16 machine's up to the order of the fp32 sums, so a bf16 run
 *       trains the same model on any CPU, and inputs that autocast keeps in bf16 for backward change no gradient here
 *       either.
 * </ul>
 * Every shape takes the native path where it runs, tiny ones included, so a product's rounding never depends on
 * its size (packing dominates tiny products, where bf16 is no faster than fp32; bench/MEASUREMENTS.md, "bf16 GEMM").
 * Like {@link Sgemm}, the result is bitwise independent of the thread count: threads only split C.
 *
 * <p>Threading: may be called from any thread; calls from inside a {@link Parallel} region run serially.
 */
public final class Bf16Gemm {
    /** Rows of a micro-tile. */
    static final int MR = 12;
    /** Columns of a micro-tile: two vectors of 16 fp32 accumulators. */
    static final int NR = 32;
    /**
     * Depth of a rank-k update, in values (KC / 2 pairs): the A micro-panel, 12 x 512 words = 24 KiB, stays in the
     * 48 KiB L1d while B panels stream past it. A deeper block means fewer passes over C (each pass adds into all
     * of it): with 1024 every product of a GPT-2-small-sized model but the head's backward makes one. The other
     * KC/NC pairs tried were no faster (bench/MEASUREMENTS.md, "bf16 GEMM").
     */
    static final int KC = 1024;
    /** Width of a packed B block: 512 pairs x 256 columns x 4 B = 512 KiB, half the 1 MiB per-core L2. */
    static final int NC = 256;
    /**
     * Most rows of a packed A block: 4092 rows x 2 KiB = 8 MiB per thread of the shared 32 MiB L3. B is packed once
     * per A block, so this many rows (a 4 x 1024-token batch) pack B once; blocks are then equal in size, so 4100
     * rows are two blocks of 2052, not 4092 + 8.
     */
    static final int MC = 4096 / MR * MR;

    /** Which kernel bf16 products run on: decided once, from the machine and {@code jtrain.bf16.kernel}. */
    private enum Backend { AMX, AVX512, FP32 }

    private static final Backend BACKEND = resolveBackend();
    private static final boolean NATIVE = BACKEND != Backend.FP32;
    private static final boolean AMX = BACKEND == Backend.AMX;
    private static final ThreadLocal<Bf16Workspace> WORKSPACE = ThreadLocal.withInitial(Bf16Workspace::new);
    private static final ThreadLocal<Bf16AmxWorkspace> AMX_WORKSPACE = ThreadLocal.withInitial(Bf16AmxWorkspace::new);
    /** The caller's buffer for an A block packed by all threads together ({@link #sharedA}). */
    private static final ThreadLocal<int[][]> SHARED_A = ThreadLocal.withInitial(() -> new int[][]{new int[0]});
    /** The same for the AMX kernel, off the heap ({@link PackBuffers}). */
    private static final ThreadLocal<MemorySegment[]> SHARED_AMX_A = ThreadLocal.withInitial(() -> new MemorySegment[]{MemorySegment.NULL});

    private Bf16Gemm() {}

    /**
     * auto: AMX tiles where the CPU has them and Linux grants their state (Sapphire Rapids and later: 16 times
     * vdpbf16ps's multiply-adds per instruction), else AVX512_BF16, else the fp32 fallback; native: either of the
     * first two or fail; amx, avx512: that one or fail; fp32: the fallback.
     */
    private static Backend resolveBackend() {
        KernelOptions.Bf16Mode mode = KernelOptions.CURRENT.bf16Kernel();
        return switch (mode) {
            case FP32 -> Backend.FP32;
            case AMX -> {
                if (!Bf16AmxKernel.available()) {
                    throw new IllegalArgumentException("jtrain.bf16.kernel=amx, but the AMX kernel cannot run here: "
                            + Bf16AmxKernel.unavailableReason() + "; use auto instead");
                }
                yield Backend.AMX;
            }
            case AVX512 -> {
                if (!Bf16Kernel.available()) {
                    throw new IllegalArgumentException("jtrain.bf16.kernel=avx512, but the AVX512_BF16 kernel cannot run here: "
                            + Bf16Kernel.unavailableReason() + "; use auto instead");
                }
                yield Backend.AVX512;
            }
            case NATIVE, AUTO -> {
                if (Bf16AmxKernel.available() && Bf16Kernel.available()) yield Backend.AMX;
                if (Bf16Kernel.available()) yield Backend.AVX512;
                if (mode == KernelOptions.Bf16Mode.NATIVE) {
                    throw new IllegalArgumentException("jtrain.bf16.kernel=native, but the bf16 kernel cannot run here: "
                            + Bf16Kernel.unavailableReason() + "; use auto (falls back to fp32 compute) instead");
                }
                yield Backend.FP32;
            }
        };
    }

    /** Whether bf16 products run on the CPU's bf16 instructions, AMX or AVX512_BF16 (else in fp32). */
    public static boolean isNative() {
        return NATIVE;
    }

    /** Whether bf16 products run on AMX tiles. */
    public static boolean isAmx() {
        return AMX;
    }

    /** One line saying how bf16 matmuls run on this machine, and why when not natively. */
    public static String backend() {
        if (AMX) return "bf16 matmuls: AMX tiles (tdpbf16ps), fp32 accumulation";
        if (NATIVE) {
            String amx = KernelOptions.CURRENT.bf16Kernel() == KernelOptions.Bf16Mode.AVX512 ? "jtrain.bf16.kernel=avx512"
                    : Bf16AmxKernel.unavailableReason();
            return "bf16 matmuls: AVX512_BF16 (vdpbf16ps), fp32 accumulation (no AMX: " + amx + ")";
        }
        String why = KernelOptions.CURRENT.bf16Kernel() == KernelOptions.Bf16Mode.FP32 ? "jtrain.bf16.kernel=fp32"
                : Bf16Kernel.unavailableReason();
        return "bf16 matmuls: fp32 compute on bf16-rounded operands (" + why + "); the values of bf16 hardware, not its speed";
    }

    public static void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                            float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
                            float beta, float[] c, int cOff, int ldc) {
        SgemmArgs.check("bf16 gemm", transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
        long volume = (long) m * n * k;
        if (volume == 0 || alpha == 0f) {
            Sgemm.sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            return;
        }
        if (!NATIVE) {
            Bf16Fallback.gemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            return;
        }
        run(m, n, k, Bf16Operands.fp32A(transA, a, aOff, lda), Bf16Operands.fp32B(transB, b, bOff, ldb), alpha, beta, c, cOff, ldc);
    }

    /**
     * {@code C = op(A) * op(B) + bias} with the row vector {@code bias[biasOff + j]} added to column j of every row:
     * a linear layer's forward. The bits are those of copying the bias into every row of C and calling {@link #gemm}
     * with beta 1 (each entry rounded once, product sum plus bias), which is what this does where the AVX512_BF16
     * kernel does not run; where it does, the kernel adds the bias as it stores its tiles, and C is written once.
     */
    public static void gemmWithBias(boolean transA, boolean transB, int m, int n, int k, float[] a, int aOff, int lda,
                                    float[] b, int bOff, int ldb, float[] bias, int biasOff, float[] c, int cOff, int ldc) {
        SgemmArgs.check("bf16 gemm with bias", transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
        SgemmArgs.matrix("bf16 gemm with bias", "bias", 1, n, bias, biasOff, Math.max(1, n), 0);
        if (!NATIVE || AMX || (long) m * n * k == 0) {
            for (int r = 0; r < m; r++) System.arraycopy(bias, biasOff, c, cOff + r * ldc, n);
            gemm(transA, transB, m, n, k, 1f, a, aOff, lda, b, bOff, ldb, 1f, c, cOff, ldc);
            return;
        }
        run(m, n, k, Bf16Operands.fp32A(transA, a, aOff, lda), Bf16Operands.fp32B(transB, b, bOff, ldb), 1f, 0f, c, cOff, ldc,
                bias, biasOff);
    }

    /**
     * {@code C = alpha * op(A) * op(B) + beta * C} on operands already held in bf16: each {@code short} is a bf16 value's
     * bits, matrices stored row-major with leading dimensions in values (the layout of a {@code torch.bfloat16} tensor
     * or a safetensors BF16 entry). Nothing is rounded, and packing reads half the bytes {@link #gemm} reads of fp32
     * operands; the result is bitwise {@link #gemm}'s on the operands widened to fp32. Without the native kernel the
     * operands are widened and multiplied in fp32, as {@link #gemm} does there.
     */
    public static void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                            short[] a, int aOff, int lda, short[] b, int bOff, int ldb,
                            float beta, float[] c, int cOff, int ldc) {
        SgemmArgs.sizes("bf16 gemm", m, n, k);
        SgemmArgs.matrix("bf16 gemm", "A", transA ? k : m, transA ? m : k, a, aOff, lda);
        SgemmArgs.matrix("bf16 gemm", "B", transB ? n : k, transB ? k : n, b, bOff, ldb);
        SgemmArgs.matrix("bf16 gemm", "C", m, n, c, cOff, ldc, 0);
        if ((long) m * n * k == 0 || alpha == 0f) {
            SgemmArgs.scale(m, n, beta, c, cOff, ldc);
            return;
        }
        if (!NATIVE) {
            float[] wa = Bf16.widen(a, aOff, (transA ? k - 1 : m - 1) * lda + (transA ? m : k));
            float[] wb = Bf16.widen(b, bOff, (transB ? n - 1 : k - 1) * ldb + (transB ? k : n));
            Bf16Fallback.gemm(transA, transB, m, n, k, alpha, wa, 0, lda, wb, 0, ldb, beta, c, cOff, ldc);
            return;
        }
        run(m, n, k, Bf16Operands.bf16A(transA, a, aOff, lda, k), Bf16Operands.bf16B(transB, b, bOff, ldb), alpha, beta, c, cOff, ldc);
    }

    /**
     * {@code C = alpha * op(A) * B + beta * C} with B (k x n) given as the bf16 words {@link Bf16#pack} made of it,
     * rows {@code ldb} floats apart: what a linear layer saved of its input for dW = dyᵀ·x. Packing reads the words
     * as they are (half the bytes of fp32, and no fp32 copy widened first); the result is bitwise {@link #gemm}'s on
     * the widened B. Needs the native kernel ({@link #isNative}), {@code ldb} a multiple of 32 and packing blocks of
     * 32 floats ({@link #takesPackedB}).
     */
    public static void gemmPackedB(boolean transA, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
                                   int[] bWords, int ldb, float beta, float[] c, int cOff, int ldc) {
        if (m < 0 || n < 0 || k < 0) {
            throw new IllegalArgumentException("bf16 gemm on packed B: negative size m=" + m + " n=" + n + " k=" + k);
        }
        if (!takesPackedB(ldb) || ldb < 1) {
            throw new IllegalArgumentException("bf16 gemm on packed B: needs the native kernel, packing blocks of 32 floats"
                    + " and ldb a positive multiple of 32; here native=" + NATIVE + ", block=" + Bf16.packBlock() + ", ldb=" + ldb);
        }
        java.util.Objects.requireNonNull(bWords, "bf16 gemm on packed B: B's words");
        // packing reads B's rows in whole blocks of 32 floats (16 words), so the last row needs n rounded up to 32
        long wordsRead = k == 0 || n == 0 ? 0 : ((long) (k - 1) * ldb + (n + 31) / 32 * 32) / 2;
        if (n > ldb || wordsRead > bWords.length) {
            throw new IllegalArgumentException("bf16 gemm on packed B: " + k + " x " + n + " (ldb " + ldb + ") needs "
                    + wordsRead + " words (rows in blocks of 32 floats), given " + bWords.length
                    + "; pack all of B's rows with Bf16.pack");
        }
        SgemmArgs.matrix("bf16 gemm on packed B", "A", transA ? k : m, transA ? m : k, a, aOff, lda, 0);
        SgemmArgs.matrix("bf16 gemm on packed B", "C", m, n, c, cOff, ldc, 0);
        if ((long) m * n * k == 0 || alpha == 0f) {
            Sgemm.sgemm(transA, false, m, n, 0, alpha, a, aOff, lda, new float[0], 0, Math.max(1, n), beta, c, cOff, ldc);
            return;
        }
        run(m, n, k, Bf16Operands.fp32A(transA, a, aOff, lda), Bf16Operands.packedWords(bWords, ldb), alpha, beta, c, cOff, ldc);
    }

    /** Whether {@link #gemmPackedB} takes B's bf16 words with rows {@code ldb} floats apart on this machine. */
    public static boolean takesPackedB(int ldb) {
        return NATIVE && Bf16.packBlock() == Bf16Pack.WORDS_BLOCK && ldb % Bf16Pack.WORDS_BLOCK == 0;
    }

    private static void run(int m, int n, int k, Bf16Operands.A a, Bf16Operands.B b, float alpha, float beta,
                            float[] c, int cOff, int ldc) {
        run(m, n, k, a, b, alpha, beta, c, cOff, ldc, null, 0);
    }

    /** With {@code bias} (AVX512_BF16 kernel, alpha 1, beta 0 only), {@link #gemmWithBias}'s row added as C is stored. */
    private static void run(int m, int n, int k, Bf16Operands.A a, Bf16Operands.B b, float alpha, float beta,
                            float[] c, int cOff, int ldc, float[] bias, int biasOff) {
        long volume = (long) m * n * k;
        int threads = Parallel.threads(), mr = AMX ? Bf16AmxPack.MR : MR;
        if (threads == 1 || volume < 1L << 20) {
            block(a, b, 0, m, 0, n, k, alpha, beta, c, cOff, ldc, bias, biasOff);
            return;
        }
        // Split C into tm x tn rectangles. A thread packs its rows of A and its columns of B, so the packing done in
        // all is tn * m * k + tm * k * n words: split across the longer side (the language-model head's 50304
        // columns are packed once, not once per thread). Rounding and packing cost ~1/50 of a product's multiply-adds
        // per word reused, so this matters here more than for fp32, whose packing is a plain copy.
        int tm = 1;
        long bestCost = Long.MAX_VALUE;
        for (int cand = 1; cand <= threads; cand++) {
            if (threads % cand != 0 || cand > Math.max(1, m / mr) || threads / cand > Math.max(1, n / NR)) continue;
            long cost = (long) (threads / cand) * m * k + (long) cand * k * n;
            if (cost < bestCost) {
                bestCost = cost;
                tm = cand;
            }
        }
        int tn = bestCost == Long.MAX_VALUE ? 1 : threads / tm;
        if (tm == 1 && tn > 1 && m >= 2 * mr * tn) {
            sharedA(m, n, k, tn, a, b, alpha, beta, c, cOff, ldc, bias, biasOff);
            return;
        }
        GemmBatches.rectangles(m, n, tm, tn, mr, NR, (i0, i1, j0, j1) -> block(a, b, i0, i1, j0, j1, k, alpha, beta, c, cOff, ldc,
                bias, biasOff));
    }

    /** One thread's rectangle of C, on this thread's workspace for the machine's kernel (a bias only without AMX). */
    private static void block(Bf16Operands.A a, Bf16Operands.B b, int i0, int i1, int j0, int j1, int k, float alpha,
                              float beta, float[] c, int cOff, int ldc, float[] bias, int biasOff) {
        if (AMX) AMX_WORKSPACE.get().gemm(a, b, i0, i1, j0, j1, k, alpha, beta, c, cOff, ldc);
        else WORKSPACE.get().gemm(a, b, i0, i1, j0, j1, k, alpha, beta, c, cOff, ldc, bias, biasOff);
    }

    /**
     * C split into {@code tn} column ranges, one per thread, with A packed once by all of them: each k block's A block
     * is packed in one parallel region (a share of its panels per thread, into the caller's buffer), then every
     * thread multiplies it with its own columns of B in a second. The split of C alone would have each thread pack
     * all of A, a visible share of a square product's time (bench/MEASUREMENTS.md, "bf16 GEMM"), and more so on AMX,
     * whose products are several times faster than the packing. The k blocks are the workspaces', so the bits are
     * those of any other split.
     */
    private static void sharedA(int m, int n, int k, int tn, Bf16Operands.A a, Bf16Operands.B b, float alpha, float beta,
                                float[] c, int cOff, int ldc, float[] bias, int biasOff) {
        if (AMX) {
            sharedAmxA(m, n, k, tn, a, b, alpha, beta, c, cOff, ldc);
            return;
        }
        int kcStep = Bf16Workspace.kcStep(k), mcStep = Bf16Workspace.mcStep(m);
        int[][] holder = SHARED_A.get();
        if (holder[0].length < mcStep * (kcStep / 2)) holder[0] = new int[mcStep * (kcStep / 2)];
        int[] ap = holder[0];
        MemorySegment apSeg = MemorySegment.ofArray(ap);
        boolean rowA = a.rowMajor();
        Bf16Workspace own = WORKSPACE.get();
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc), kp = (kc + 1) / 2, fpc = pc;
            float betaPc = pc == 0 ? beta : 1f;
            float[] biasPc = pc == 0 ? bias : null;
            for (int ic = 0; ic < m; ic += mcStep) {
                // rows the kernel reads where A is stored need no packing; the others are packed from word 0
                int mc = Math.min(mcStep, m - ic), fic = ic, inPlace = own.inPlaceRows(a.inPlace(), mc, kc),
                        packed = mc - inPlace, from = ic + inPlace;
                Parallel.forRange((packed + MR - 1) / MR, 1, (lo, hi) -> a.pack(from + lo * MR, fpc,
                        Math.min(packed, hi * MR) - lo * MR, kc, ap, apSeg, lo * MR * kp));
                Parallel.forRange(tn, 1, (lo, hi) -> {
                    Bf16Workspace ws = WORKSPACE.get();
                    for (int t = lo; t < hi; t++) {
                        int j0 = GemmBatches.split(n, tn, t, NR), j1 = GemmBatches.split(n, tn, t + 1, NR);
                        if (j0 < j1) {
                            ws.multiply(rowA, a.inPlace(), inPlace, ap, apSeg, fic, mc, fpc, kc, b, j0, j1, alpha, betaPc,
                                    c, cOff, ldc, biasPc, biasOff);
                        }
                    }
                });
            }
        }
    }

    /** {@link #sharedA} on the AMX kernel: the same two regions, with the A block in its panels off the heap. */
    private static void sharedAmxA(int m, int n, int k, int tn, Bf16Operands.A a, Bf16Operands.B b, float alpha, float beta,
                                   float[] c, int cOff, int ldc) {
        int kcStep = Bf16AmxWorkspace.kcStep(k), mcStep = Bf16AmxWorkspace.mcStep(m), mr = Bf16AmxPack.MR;
        MemorySegment[] holder = SHARED_AMX_A.get();
        holder[0] = PackBuffers.atLeast(holder[0], (long) Bf16AmxWorkspace.blockWords(mcStep, kcStep) * Integer.BYTES);
        MemorySegment ap = holder[0];
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc), fpc = pc, panelWords = Bf16AmxPack.panelWords(kc);
            float betaPc = pc == 0 ? beta : 1f;
            for (int ic = 0; ic < m; ic += mcStep) {
                int mc = Math.min(mcStep, m - ic), fic = ic;
                Parallel.forRange((mc + mr - 1) / mr, 1, (lo, hi) ->
                        a.packAmx(fic + lo * mr, fpc, Math.min(mc, hi * mr) - lo * mr, kc, ap, lo * panelWords));
                Parallel.forRange(tn, 1, (lo, hi) -> {
                    Bf16AmxWorkspace ws = AMX_WORKSPACE.get();
                    for (int t = lo; t < hi; t++) {
                        int j0 = GemmBatches.split(n, tn, t, NR), j1 = GemmBatches.split(n, tn, t + 1, NR);
                        if (j0 < j1) ws.multiply(ap, fic, mc, fpc, kc, b, j0, j1, alpha, betaPc, c, cOff, ldc);
                    }
                });
            }
        }
    }

    /**
     * {@code batch} independent products; matrix {@code i} of A starts at {@code aOff + i * strideA} (likewise B,
     * C). Small ones (attention heads) run one whole product per thread.
     */
    public static void gemmBatched(boolean transA, boolean transB, int batch, int m, int n, int k, float alpha,
                                   float[] a, int aOff, int lda, long strideA, float[] b, int bOff, int ldb, long strideB,
                                   float beta, float[] c, int cOff, int ldc, long strideC) {
        GemmBatches.run("bf16 gemmBatched", Bf16Gemm::gemm, transA, transB, batch, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                beta, c, cOff, ldc, strideC);
    }
}
