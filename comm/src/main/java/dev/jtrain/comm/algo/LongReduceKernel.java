package dev.jtrain.comm.algo;

import dev.jtrain.comm.ReduceOp;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * {@code dst[i] = a[i] (op) b[i]} over int64 segments with the Vector API; {@code dst} may alias {@code a} or
 * {@code b} at the same offset. One loop per operator so each is a straight-line vector loop the JIT unrolls
 * (reduction sits on the bandwidth-critical path of every all-reduce: it must run at memory speed).
 */
final class LongReduceKernel {
    private static final VectorSpecies<Long> S = LongVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder(); // heap float[] segments are in platform order
    private static final long W = 8;

    private LongReduceKernel() {}

    static void apply(ReduceOp op, MemorySegment dst, MemorySegment a, MemorySegment b, long count) {
        long vecEnd = S.loopBound(count) * W;
        long step = (long) S.length() * W;
        long i = 0;
        switch (op) {
            case SUM, AVG -> {
                for (; i < vecEnd; i += step)
                    LongVector.fromMemorySegment(S, a, i, LE).add(LongVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_LONG_UNALIGNED, i, a.get(JAVA_LONG_UNALIGNED, i) + b.get(JAVA_LONG_UNALIGNED, i));
            }
            case MAX -> {
                for (; i < vecEnd; i += step)
                    LongVector.fromMemorySegment(S, a, i, LE).max(LongVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_LONG_UNALIGNED, i, Math.max(a.get(JAVA_LONG_UNALIGNED, i), b.get(JAVA_LONG_UNALIGNED, i)));
            }
            case MIN -> {
                for (; i < vecEnd; i += step)
                    LongVector.fromMemorySegment(S, a, i, LE).min(LongVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_LONG_UNALIGNED, i, Math.min(a.get(JAVA_LONG_UNALIGNED, i), b.get(JAVA_LONG_UNALIGNED, i)));
            }
            case PRODUCT -> {
                for (; i < vecEnd; i += step)
                    LongVector.fromMemorySegment(S, a, i, LE).mul(LongVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_LONG_UNALIGNED, i, a.get(JAVA_LONG_UNALIGNED, i) * b.get(JAVA_LONG_UNALIGNED, i));
            }
        }
    }

    /** {@code buf[i] /= divisor}, truncating toward zero (the final step of AVG). */
    static void divide(MemorySegment buf, long count, int divisor) {
        long d = divisor;
        long vecEnd = S.loopBound(count) * W;
        long step = (long) S.length() * W;
        long i = 0;
        for (; i < vecEnd; i += step) LongVector.fromMemorySegment(S, buf, i, LE).div(d).intoMemorySegment(buf, i, LE);
        for (; i < count * W; i += W) buf.set(JAVA_LONG_UNALIGNED, i, buf.get(JAVA_LONG_UNALIGNED, i) / d);
    }
}
