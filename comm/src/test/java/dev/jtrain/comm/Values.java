package dev.jtrain.comm;

import dev.jtrain.comm.algo.ReduceKernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * Test data: small integers (exact in every dtype, so reductions in any order give identical results) written into
 * segments of any dtype, and a plain reference of every reduce op.
 */
final class Values {
    private Values() {}

    /** Deterministic values of (seed, rank, case): in [-3, 3], or in {-2,-1,1,2} for PRODUCT. */
    static long[] generate(long seed, int rank, int caseIndex, long count, ReduceOp op) {
        SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + rank * 7919L + caseIndex);
        long[] v = new long[Math.toIntExact(count)];
        for (int i = 0; i < v.length; i++) {
            if (op == ReduceOp.PRODUCT) {
                int x = rnd.nextInt(4);
                v[i] = x < 2 ? x - 2 : x - 1;
            } else {
                v[i] = rnd.nextInt(7) - 3;
            }
        }
        return v;
    }

    static MemorySegment allocate(DType d, long count, boolean nativeMemory) {
        long bytes = d.bytes(count);
        return nativeMemory ? Arena.ofAuto().allocate(Math.max(bytes, 1), 64).asSlice(0, bytes)
                : MemorySegment.ofArray(new byte[Math.toIntExact(bytes)]);
    }

    static MemorySegment segment(DType d, long[] v, boolean nativeMemory) {
        MemorySegment s = allocate(d, v.length, nativeMemory);
        for (int i = 0; i < v.length; i++) set(d, s, i, v[i]);
        return s;
    }

    static void set(DType d, MemorySegment s, long i, double x) {
        switch (d) {
            case FLOAT32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) x);
            case FLOAT64 -> s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, x);
            case INT32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, (int) x);
            case INT64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, (long) x);
            case BFLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, ReduceKernels.floatToBf16((float) x));
        }
    }

    static double get(DType d, MemorySegment s, long i) {
        return switch (d) {
            case FLOAT32 -> s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
            case FLOAT64 -> s.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i);
            case INT32 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
            case INT64 -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
            case BFLOAT16 -> ReduceKernels.bf16ToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i));
        };
    }

    /** The reduction of {@code inputs[rank][i]} over ranks, with AVG's division done as the library does per dtype. */
    static double[] reference(DType d, ReduceOp op, long[][] inputs) {
        int p = inputs.length, n = inputs[0].length;
        double[] out = new double[n];
        for (int i = 0; i < n; i++) {
            long acc = inputs[0][i];
            for (int r = 1; r < p; r++) {
                long x = inputs[r][i];
                acc = switch (op) {
                    case SUM, AVG -> acc + x;
                    case MAX -> Math.max(acc, x);
                    case MIN -> Math.min(acc, x);
                    case PRODUCT -> acc * x;
                };
            }
            out[i] = op != ReduceOp.AVG ? acc : switch (d) {
                case FLOAT32 -> (float) acc / (float) p;
                case FLOAT64 -> (double) acc / p;
                case INT32, INT64 -> acc / p;
                case BFLOAT16 -> ReduceKernels.bf16ToFloat(ReduceKernels.floatToBf16((float) acc / p));
            };
        }
        return out;
    }

    /** Fails with the first differing element. */
    static void assertEquals(String what, DType d, MemorySegment actual, long actualFirst, double[] expected, int expFirst, int count) {
        for (int i = 0; i < count; i++) {
            double a = get(d, actual, actualFirst + i), e = expected[expFirst + i];
            if (Double.compare(a, e) != 0 && !(a == 0 && e == 0)) {
                throw new AssertionError(what + ": element " + i + " expected " + e + " but was " + a);
            }
        }
    }

    static double[] asDoubles(long[] v) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) d[i] = v[i];
        return d;
    }
}
