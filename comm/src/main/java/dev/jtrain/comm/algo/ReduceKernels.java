package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Element-wise reductions over segments, dispatched once per call by dtype (one kernel class per dtype keeps each
 * loop monomorphic). Also the float32 &lt;-&gt; bfloat16 codec of the compressed wire format.
 */
public final class ReduceKernels {
    private static final AtomicBoolean WARMED = new AtomicBoolean();

    private ReduceKernels() {}

    /**
     * Runs the float32 SUM kernel (all-reduce's hot loop) until the JIT has compiled it, once per JVM: interpreted or
     * C1-compiled Vector API code allocates a box per vector op and is orders of magnitude slower than C2's, and the
     * first real collectives would pay for it. Looping over tiny vectors reaches the compile thresholds quickly
     * (bench/MEASUREMENTS.md, "reduce kernel warm-up").
     */
    public static void warmUp() {
        if (!WARMED.compareAndSet(false, true)) return;
        MemorySegment s = Arena.ofAuto().allocate(256, 64);
        for (int i = 0; i < 5000; i++) apply(DType.FLOAT32, ReduceOp.SUM, s, s, s, 64);
        for (int i = 0; i < 2000; i++) divide(DType.FLOAT32, s, 64, 3);
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
