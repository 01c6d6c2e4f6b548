package dev.jtrain.comm.algo;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The Vector API kernels against a plain scalar loop, for every dtype x op, lengths around the vector width. */
class ReduceKernelsTest {
    static final long SEED = System.nanoTime();

    @Test
    void vectorKernelsMatchAScalarReference() {
        System.out.println("ReduceKernelsTest seed=" + SEED);
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (DType d : DType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                for (int n : new int[] {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 65, 1000, 4099}) {
                    MemorySegment a = random(d, n, rnd), b = random(d, n, rnd);
                    MemorySegment dst = Arena.ofAuto().allocate(Math.max(1, d.bytes(n)), 8).asSlice(0, d.bytes(n));
                    ReduceKernels.apply(d, op, dst, a, b, n);
                    for (int i = 0; i < n; i++) {
                        long got = bits(d, dst, i), want = scalar(d, op, a, b, i);
                        if (got != want) {
                            throw new AssertionError(d + " " + op + " n=" + n + " i=" + i + ": got bits " + Long.toHexString(got)
                                    + " want " + Long.toHexString(want) + " seed=" + SEED);
                        }
                    }
                    // in place (dst aliases a) gives the same
                    MemorySegment a2 = Arena.ofAuto().allocate(Math.max(1, d.bytes(n)), 8).asSlice(0, d.bytes(n));
                    a2.copyFrom(a);
                    ReduceKernels.apply(d, op, a2, a2, b, n);
                    assertThat(a2.mismatch(dst)).isEqualTo(-1L);
                }
            }
        }
    }

    /**
     * AVG's float32 division, bit for bit against {@code x / divisor}, on each kind of segment it meets: a heap
     * {@code float[]} whole or sliced at a float (its array path) or at an odd byte (the segment path), and native
     * memory. The floats around a slice must be left alone.
     */
    @Test
    void float32DivisionMatchesScalarDivisionOnHeapSlicesAndNativeMemory() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        for (int divisor : new int[] {1, 2, 3, 7}) {
            for (int n : new int[] {0, 1, 7, 8, 9, 17, 33, 1000, 4099}) {
                for (String kind : new String[] {"heap", "heap slice at float 5", "heap slice at byte 2", "native"}) {
                    float[] backing = new float[n + 6];
                    for (int i = 0; i < backing.length; i++) backing[i] = (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(-40, 38)));
                    float[] before = backing.clone();
                    MemorySegment seg = switch (kind) {
                        case "heap" -> MemorySegment.ofArray(backing).asSlice(0, 4L * n);
                        case "heap slice at float 5" -> MemorySegment.ofArray(backing).asSlice(20, 4L * n);
                        case "heap slice at byte 2" -> MemorySegment.ofArray(backing).asSlice(2, 4L * n);
                        default -> Arena.ofAuto().allocate(Math.max(4, 4L * n), 8).asSlice(0, 4L * n)
                                .copyFrom(MemorySegment.ofArray(backing).asSlice(0, 4L * n));
                    };
                    float[] expected = new float[n];
                    for (int i = 0; i < n; i++) expected[i] = seg.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4L * i) / divisor;
                    ReduceKernels.divide(DType.FLOAT32, seg, n, divisor);
                    for (int i = 0; i < n; i++)
                        assertThat(Float.floatToIntBits(seg.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4L * i))) // any NaN is NaN: a
                                .as("%s n=%d divisor=%d i=%d", kind, n, divisor, i) // byte-offset slice reads some
                                .isEqualTo(Float.floatToIntBits(expected[i]));
                    if (kind.equals("heap slice at float 5")) {
                        for (int i = 0; i < 5; i++) assertThat(backing[i]).as("float %d before the slice", i).isEqualTo(before[i]);
                        assertThat(backing[n + 5]).as("the float after the slice").isEqualTo(before[n + 5]);
                    }
                }
            }
        }
    }

    /**
     * The bfloat16 wire codec (vector body, scalar tail) against the scalar encode/decode, bit for bit: random values
     * and the cases rounding gets wrong first (ties both ways, a carry into the exponent, NaN, infinities, subnormals,
     * signed zeros), at lengths around the vector width.
     */
    @Test
    void bf16CodecAndAvgDivisionMatchTheScalarDefinitionBitForBit() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        float[] special = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-7f, 0x1.fffffep0f, -0x1.ff8p3f, Float.NaN,
                Float.intBitsToFloat(0x7F800001), Float.intBitsToFloat(0xFFC00000), Float.POSITIVE_INFINITY,
                Float.NEGATIVE_INFINITY, Float.MIN_VALUE, -Float.MIN_NORMAL, 0f, -0f, Float.MAX_VALUE, 3.4e38f};
        for (int n : new int[] {0, 1, 7, 15, 16, 17, 31, 33, 100, 4099}) {
            MemorySegment f32 = MemorySegment.ofArray(new float[Math.max(1, n)]).asSlice(0, 4L * n);
            for (int i = 0; i < n; i++) {
                float v = i < special.length && n > 16 ? special[i] : (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(-30, 30)));
                f32.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, v);
            }
            MemorySegment wire = MemorySegment.ofArray(new short[Math.max(1, n)]).asSlice(0, 2L * n);
            ReduceKernels.compressBf16(f32, wire, n);
            for (int i = 0; i < n; i++) {
                float v = f32.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
                assertThat(wire.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i)).as("compress n=%d i=%d %s", n, i, v)
                        .isEqualTo(ReduceKernels.floatToBf16(v));
            }
            MemorySegment back = MemorySegment.ofArray(new float[Math.max(1, n)]).asSlice(0, 4L * n);
            ReduceKernels.expandBf16(wire, back, n);
            for (int i = 0; i < n; i++) {
                short w = wire.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
                assertThat(Float.floatToRawIntBits(back.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i))).as("expand n=%d i=%d", n, i)
                        .isEqualTo(Float.floatToRawIntBits(ReduceKernels.bf16ToFloat(w)));
            }
            for (int divisor : new int[] {3, 4, 7}) {
                MemorySegment avg = MemorySegment.ofArray(new short[Math.max(1, n)]).asSlice(0, 2L * n);
                avg.copyFrom(wire);
                ReduceKernels.divide(DType.BFLOAT16, avg, n, divisor);
                for (int i = 0; i < n; i++) {
                    float x = ReduceKernels.bf16ToFloat(wire.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i));
                    assertThat(avg.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i)).as("divide by %d n=%d i=%d %s", divisor, n, i, x)
                            .isEqualTo(ReduceKernels.floatToBf16(x / divisor));
                }
            }
        }
    }

    @Test
    void bf16RoundsToNearestEvenAndKeepsNaN() {
        assertThat(ReduceKernels.floatToBf16(1.0f)).isEqualTo((short) 0x3F80);
        // 1 + 2^-8 is exactly half-way between 1 and 1 + 2^-7: ties to even (1.0)
        assertThat(ReduceKernels.floatToBf16(1.0f + 0x1p-8f)).isEqualTo((short) 0x3F80);
        assertThat(ReduceKernels.floatToBf16(1.0f + 0x1p-8f + 0x1p-20f)).isEqualTo((short) 0x3F81);
        assertThat(Float.isNaN(ReduceKernels.bf16ToFloat(ReduceKernels.floatToBf16(Float.intBitsToFloat(0x7FFFFFFF))))).isTrue();
        assertThat(ReduceKernels.bf16ToFloat(ReduceKernels.floatToBf16(Float.POSITIVE_INFINITY))).isEqualTo(Float.POSITIVE_INFINITY);
    }

    static MemorySegment random(DType d, int n, SplittableRandom rnd) {
        MemorySegment s = MemorySegment.ofArray(new byte[(int) d.bytes(n)]);
        for (int i = 0; i < n; i++) {
            switch (d) {
                case FLOAT32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) rnd.nextGaussian());
                case FLOAT64 -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, rnd.nextGaussian());
                case INT32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, rnd.nextInt());
                case INT64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
                case BFLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, ReduceKernels.floatToBf16((float) rnd.nextGaussian()));
            }
        }
        return s;
    }

    static long bits(DType d, MemorySegment s, int i) {
        return switch (d) {
            case FLOAT32, INT32 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
            case FLOAT64, INT64 -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
            case BFLOAT16 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
        };
    }

    static long scalar(DType d, ReduceOp op, MemorySegment a, MemorySegment b, int i) {
        return switch (d) {
            case FLOAT32 -> Float.floatToRawIntBits((float) f(op, a.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i), b.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i)));
            case FLOAT64 -> Double.doubleToRawLongBits(f(op, a.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i), b.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i)));
            case INT32 -> (int) l(op, a.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i), b.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i));
            case INT64 -> l(op, a.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i), b.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i));
            case BFLOAT16 -> ReduceKernels.floatToBf16((float) f(op, ReduceKernels.bf16ToFloat(a.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i)),
                    ReduceKernels.bf16ToFloat(b.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i))));
        };
    }

    /** Evaluated in float arithmetic (both operands are float), widened exactly to double. */
    static double f(ReduceOp op, float x, float y) {
        return switch (op) {
            case SUM, AVG -> x + y;
            case MAX -> Math.max(x, y);
            case MIN -> Math.min(x, y);
            case PRODUCT -> x * y;
        };
    }

    static double f(ReduceOp op, double x, double y) {
        return switch (op) {
            case SUM, AVG -> x + y;
            case MAX -> Math.max(x, y);
            case MIN -> Math.min(x, y);
            case PRODUCT -> x * y;
        };
    }

    static long l(ReduceOp op, long x, long y) {
        return switch (op) {
            case SUM, AVG -> x + y;
            case MAX -> Math.max(x, y);
            case MIN -> Math.min(x, y);
            case PRODUCT -> x * y;
        };
    }
}
