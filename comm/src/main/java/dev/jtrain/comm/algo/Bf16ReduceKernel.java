package dev.jtrain.comm.algo;

import dev.jtrain.comm.ReduceOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

/**
 * {@code dst[i] = a[i] (op) b[i]} over bfloat16 segments: decode to float32, combine, round to nearest even.
 *
 * <p>Vector trick: an int lane holds two adjacent bfloat16 values (little-endian: element 2k in the low half), so
 * {@code x << 16} is element 2k as float bits and {@code x & 0xFFFF0000} is element 2k+1 — no shuffles needed.
 * The rounding conversions to the bfloat16 wire form ({@link #compress} and the AVG division) narrow a lane at a time
 * ({@code vpmovdw} on x86) and give the same bits as the scalar {@link #encode}: they run over every gradient of every
 * step that uses the bf16 wire (figures: bench/MEASUREMENTS.md, "Where the CPU goes").
 */
final class Bf16ReduceKernel {
    private static final VectorSpecies<Integer> SI = IntVector.SPECIES_PREFERRED;
    /**
     * Half as wide as {@link #SI}: the bfloat16 lanes of one int vector's worth of float32; null where no such shape
     * exists (an int vector under 128 bits), and then the conversions run their scalar loops.
     */
    private static final VectorSpecies<Short> SS = halfShorts();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder(); // as JAVA_FLOAT_UNALIGNED / JAVA_SHORT_UNALIGNED

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

    private static VectorSpecies<Short> halfShorts() {
        if (SI.vectorBitSize() < 128) return null;
        VectorSpecies<Short> s = VectorSpecies.of(short.class, VectorShape.forBitSize(SI.vectorBitSize() / 2));
        return s.length() == SI.length() ? s : null;
    }

    /** {@code buf[i] = encode(decode(buf[i]) / divisor)}: the final step of AVG, on the bfloat16 result. */
    static void divide(MemorySegment buf, long count, int divisor) {
        FloatVector d = FloatVector.broadcast(SI.withLanes(float.class), (float) divisor);
        long n = SS == null ? 0 : SI.loopBound(count), i = 0;
        for (; i < n; i += SI.length()) narrow(widen(buf, i).reinterpretAsFloats().div(d), buf, i);
        for (; i < count; i++) buf.set(JAVA_SHORT_UNALIGNED, 2 * i, encode(decode(buf.get(JAVA_SHORT_UNALIGNED, 2 * i)) / divisor));
    }

    /** float32 to bfloat16, round to nearest even ({@link #encode} per element). */
    static void compress(MemorySegment f32, MemorySegment bf16, long count) {
        long n = SS == null ? 0 : SI.loopBound(count), i = 0;
        for (; i < n; i += SI.length()) narrow(FloatVector.fromMemorySegment(SI.withLanes(float.class), f32, 4 * i, NATIVE), bf16, i);
        for (; i < count; i++) bf16.set(JAVA_SHORT_UNALIGNED, 2 * i, encode(f32.get(JAVA_FLOAT_UNALIGNED, 4 * i)));
    }

    /**
     * bfloat16 to float32, exact ({@link #decode} per element). A plain loop: C2 vectorizes it by itself, and it ran
     * faster than {@link #widen} here.
     */
    static void expand(MemorySegment bf16, MemorySegment f32, long count) {
        for (long i = 0; i < count; i++) f32.set(JAVA_FLOAT_UNALIGNED, 4 * i, decode(bf16.get(JAVA_SHORT_UNALIGNED, 2 * i)));
    }

    /** Elements i .. i + lanes of a bfloat16 buffer as float32 bits: sign-extended, then shifted past the extension. */
    private static IntVector widen(MemorySegment bf16, long i) {
        ShortVector s = ShortVector.fromMemorySegment(SS, bf16, 2 * i, NATIVE);
        return ((IntVector) s.convertShape(VectorOperators.S2I, SI, 0)).lanewise(VectorOperators.LSHL, 16);
    }

    /** {@code f} rounded to bfloat16 into elements i .. i + lanes of {@code bf16}. */
    private static void narrow(FloatVector f, MemorySegment bf16, long i) {
        IntVector r = round(f.reinterpretAsInts()).lanewise(VectorOperators.LSHR, 16);
        ((ShortVector) r.convertShape(VectorOperators.I2S, SS, 0)).intoMemorySegment(bf16, 2 * i, NATIVE);
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
