package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ReduceOp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Element-wise reductions over segments, dispatched once per call by dtype (one kernel class per dtype keeps each
 * loop monomorphic). Also the float32 &lt;-&gt; bfloat16 codec of the compressed wire format.
 */
public final class ReduceKernels {
    private static final AtomicBoolean WARMED = new AtomicBoolean();

    private ReduceKernels() {}

    /**
     * Runs the float32 SUM kernel (all-reduce's hot loop) and AVG's division until the JIT has compiled them, once per
     * JVM: interpreted or C1-compiled Vector API code allocates a box per vector op and is orders of magnitude slower
     * than C2's, and the first real collectives would pay for it. Looping over tiny vectors reaches the compile
     * thresholds quickly (bench/MEASUREMENTS.md, "reduce kernel warm-up").
     *
     * <p>Both operators data parallelism uses (SUM, AVG) and every kind of segment real traffic brings (a heap
     * {@code float[]} gradient bucket combined with a native receive buffer or a mapped shared-memory ring, and native
     * with native) go through it: C2 compiles against the branches and receiver types it has seen, and one first met in
     * a real collective deoptimizes the kernel and compiles it again. A restarted rank, which skipped the warm-up, compiled
     * the kernel five times during its first gradient all-reduce (bench/MEASUREMENTS.md, "Compile work and cold code of
     * a restarted rank"). It runs in the group's start rather than on a thread of its own, where it competed with the
     * first step's compiles (same section).
     */
    public static void warmUp() {
        if (!WARMED.compareAndSet(false, true)) return;
        final int n = 256;
        MemorySegment nat = Arena.ofAuto().allocate(4L * n, 64);
        MemorySegment heap = MemorySegment.ofArray(new float[n]);
        MemorySegment mapped = mappedScratch(4L * n);
        MemorySegment[][] kinds = mapped == null
                ? new MemorySegment[][] {{heap, nat}, {nat, nat}, {nat, heap}}
                : new MemorySegment[][] {{heap, nat}, {heap, mapped}, {nat, nat}, {nat, mapped}, {nat, heap}};
        for (int i = 0; i < 6000; i++) {
            MemorySegment[] k = kinds[i % kinds.length];
            apply(DType.FLOAT32, i % 4 < 2 ? ReduceOp.SUM : ReduceOp.AVG, k[0], k[0], k[1], i % 2 == 0 ? n : n - 3);
        }
        for (int i = 0; i < 3000; i++) divide(DType.FLOAT32, i % 2 == 0 ? heap : nat, i % 4 < 2 ? n : n - 3, 3);
    }

    /** A small file-backed segment, as a shared-memory ring is; null when no temporary file can be made. */
    private static MemorySegment mappedScratch(long bytes) {
        try {
            Path f = Files.createTempFile("jtrain-warmup", ".bin");
            try (FileChannel fc = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                return fc.map(FileChannel.MapMode.READ_WRITE, 0, bytes, Arena.ofAuto());
            } finally {
                Files.deleteIfExists(f);
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** {@code dst = a (op) b} element-wise over {@code count} elements; {@code dst} may alias {@code a} or {@code b}. */
    public static void apply(DType dtype, ReduceOp op, MemorySegment dst, MemorySegment a, MemorySegment b, long count) {
        if (count == 0) return;
        switch (dtype) {
            case FLOAT32 -> FloatReduceKernel.apply(op, dst, a, b, count);
            case FLOAT64 -> DoubleReduceKernel.apply(op, dst, a, b, count);
            case INT32 -> IntReduceKernel.apply(op, dst, a, b, count);
            case INT64 -> LongReduceKernel.apply(op, dst, a, b, count);
            case BFLOAT16 -> Bf16ReduceKernel.apply(op, dst, a, b, count);
        }
    }

    /** The final division of {@link ReduceOp#AVG}. */
    public static void divide(DType dtype, MemorySegment buf, long count, int divisor) {
        if (count == 0 || divisor == 1) return;
        switch (dtype) {
            case FLOAT32 -> FloatReduceKernel.divide(buf, count, divisor);
            case FLOAT64 -> DoubleReduceKernel.divide(buf, count, divisor);
            case INT32 -> IntReduceKernel.divide(buf, count, divisor);
            case INT64 -> LongReduceKernel.divide(buf, count, divisor);
            case BFLOAT16 -> Bf16ReduceKernel.divide(buf, count, divisor);
        }
    }

    /** float32 -> bfloat16, round to nearest even. */
    public static void compressBf16(MemorySegment f32, MemorySegment bf16, long count) { Bf16ReduceKernel.compress(f32, bf16, count); }

    /** bfloat16 -> float32 (exact). */
    public static void expandBf16(MemorySegment bf16, MemorySegment f32, long count) { Bf16ReduceKernel.expand(bf16, f32, count); }

    /** Scalar bfloat16 helpers for references and tests. */
    public static float bf16ToFloat(short bits) { return Bf16ReduceKernel.decode(bits); }

    public static short floatToBf16(float f) { return Bf16ReduceKernel.encode(f); }
}
