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
