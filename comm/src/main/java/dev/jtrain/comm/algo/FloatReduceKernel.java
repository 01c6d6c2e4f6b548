package dev.jtrain.comm.algo;

import dev.jtrain.comm.ReduceOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;

/**
 * {@code dst[i] = a[i] (op) b[i]} over float32 segments with the Vector API; {@code dst} may alias {@code a} or
 * {@code b} at the same offset. One loop per operator so each is a straight-line vector loop the JIT unrolls
 * (reduction sits on the bandwidth-critical path of every all-reduce: it must run at memory speed).
 */
final class FloatReduceKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder(); // heap float[] segments are in platform order
    private static final long W = 4;

    private FloatReduceKernel() {}

    static void apply(ReduceOp op, MemorySegment dst, MemorySegment a, MemorySegment b, long count) {
        long vecEnd = S.loopBound(count) * W;
        long step = (long) S.length() * W;
        long i = 0;
        switch (op) {
            case SUM, AVG -> {
                for (; i < vecEnd; i += step)
                    FloatVector.fromMemorySegment(S, a, i, LE).add(FloatVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_FLOAT_UNALIGNED, i, a.get(JAVA_FLOAT_UNALIGNED, i) + b.get(JAVA_FLOAT_UNALIGNED, i));
            }
            case MAX -> {
                for (; i < vecEnd; i += step)
                    FloatVector.fromMemorySegment(S, a, i, LE).max(FloatVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_FLOAT_UNALIGNED, i, Math.max(a.get(JAVA_FLOAT_UNALIGNED, i), b.get(JAVA_FLOAT_UNALIGNED, i)));
            }
            case MIN -> {
                for (; i < vecEnd; i += step)
                    FloatVector.fromMemorySegment(S, a, i, LE).min(FloatVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_FLOAT_UNALIGNED, i, Math.min(a.get(JAVA_FLOAT_UNALIGNED, i), b.get(JAVA_FLOAT_UNALIGNED, i)));
            }
            case PRODUCT -> {
                for (; i < vecEnd; i += step)
                    FloatVector.fromMemorySegment(S, a, i, LE).mul(FloatVector.fromMemorySegment(S, b, i, LE)).intoMemorySegment(dst, i, LE);
                for (; i < count * W; i += W) dst.set(JAVA_FLOAT_UNALIGNED, i, a.get(JAVA_FLOAT_UNALIGNED, i) * b.get(JAVA_FLOAT_UNALIGNED, i));
            }
        }
    }

    /**
     * {@code buf[i] /= divisor} (the final step of AVG). A gradient bucket is a heap {@code float[]}, and over a whole
     * array the Vector API's array loop runs at memory speed, about 2.5x the segment loop's (whose accesses keep their
     * per-access checks), so such a segment is divided through its array.
     */
    static void divide(MemorySegment buf, long count, int divisor) {
        float d = divisor;
        if (buf.heapBase().orElse(null) instanceof float[] array && buf.address() % W == 0 && count <= Integer.MAX_VALUE) {
            divide(array, (int) (buf.address() / W), (int) count, d); // a heap segment's address is its byte offset
            return;
        }
        long vecEnd = S.loopBound(count) * W;
        long step = (long) S.length() * W;
        long i = 0;
        for (; i < vecEnd; i += step) FloatVector.fromMemorySegment(S, buf, i, LE).div(d).intoMemorySegment(buf, i, LE);
        for (; i < count * W; i += W) buf.set(JAVA_FLOAT_UNALIGNED, i, buf.get(JAVA_FLOAT_UNALIGNED, i) / d);
    }

    private static void divide(float[] a, int off, int n, float d) {
        int i = 0, end = S.loopBound(n);
        for (; i < end; i += S.length()) FloatVector.fromArray(S, a, off + i).div(d).intoArray(a, off + i);
        for (; i < n; i++) a[off + i] /= d;
    }
}
