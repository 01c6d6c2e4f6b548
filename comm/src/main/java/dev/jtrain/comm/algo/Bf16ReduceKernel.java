package dev.jtrain.comm.algo;

import dev.jtrain.comm.ReduceOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

/**
 * {@code dst[i] = a[i] (op) b[i]} over bfloat16 segments: decode to float32, combine, round to nearest even.
 *
 * <p>Vector trick: an int lane holds two adjacent bfloat16 values (little-endian: element 2k in the low half), so
 * {@code x << 16} is element 2k as float bits and {@code x & 0xFFFF0000} is element 2k+1 — no shuffles needed.
 */
final class Bf16ReduceKernel {
    private static final VectorSpecies<Integer> SI = IntVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private Bf16ReduceKernel() {}

    static void apply(ReduceOp op, MemorySegment dst, MemorySegment a, MemorySegment b, long count) {
        long pairs = count / 2;
        long vecEnd = SI.loopBound(pairs) * 4;
        long step = (long) SI.length() * 4;
        long i = 0;
        for (; i < vecEnd; i += step) {
            IntVector x = IntVector.fromMemorySegment(SI, a, i, LE);
            IntVector y = IntVector.fromMemorySegment(SI, b, i, LE);
            FloatVector lo = combine(op, low(x), low(y));
            FloatVector hi = combine(op, high(x), high(y));
            IntVector r = round(lo.reinterpretAsInts()).lanewise(VectorOperators.LSHR, 16)
                    .or(round(hi.reinterpretAsInts()).and(0xFFFF0000));
            r.intoMemorySegment(dst, i, LE);
        }
        for (; i < count * 2; i += 2) {
            float r = scalar(op, decode(a.get(JAVA_SHORT_UNALIGNED, i)), decode(b.get(JAVA_SHORT_UNALIGNED, i)));
            dst.set(JAVA_SHORT_UNALIGNED, i, encode(r));
        }
    }

    static void divide(MemorySegment buf, long count, int divisor) {
        for (long i = 0; i < count * 2; i += 2) buf.set(JAVA_SHORT_UNALIGNED, i, encode(decode(buf.get(JAVA_SHORT_UNALIGNED, i)) / divisor));
    }

    static float decode(short bits) { return Float.intBitsToFloat((bits & 0xFFFF) << 16); }

    /** Round to nearest even; NaN stays NaN (quieted) instead of being rounded into an infinity. */
    static short encode(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7FFFFFFF) > 0x7F800000) return (short) ((bits | 0x00400000) >>> 16);
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    private static FloatVector low(IntVector x) { return x.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(); }

    private static FloatVector high(IntVector x) { return x.and(0xFFFF0000).reinterpretAsFloats(); }

    private static FloatVector combine(ReduceOp op, FloatVector x, FloatVector y) {
        return switch (op) {
            case SUM, AVG -> x.add(y);
            case MAX -> x.max(y);
            case MIN -> x.min(y);
            case PRODUCT -> x.mul(y);
        };
    }

    private static float scalar(ReduceOp op, float x, float y) {
        return switch (op) {
            case SUM, AVG -> x + y;
            case MAX -> Math.max(x, y);
            case MIN -> Math.min(x, y);
            case PRODUCT -> x * y;
        };
    }

    /** Rounded float bits (not yet shifted): bits + 0x7FFF + lsb, or the quieted NaN. */
    private static IntVector round(IntVector f) {
        IntVector rounded = f.add(f.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF);
        VectorMask<Integer> nan = f.and(0x7FFFFFFF).compare(VectorOperators.GT, 0x7F800000);
        return rounded.blend(f.or(0x00400000), nan);
    }
}
