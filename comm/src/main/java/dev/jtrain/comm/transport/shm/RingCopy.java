package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.transport.Combiner;

import java.lang.foreign.MemorySegment;

/** Copies into and out of a ring's data area (or folds out of it), splitting at the wrap-around point. Stateless. */
final class RingCopy {
    private RingCopy() { }

    static void in(MemorySegment data, long position, MemorySegment src, long srcOffset, long n) {
        long cap = data.byteSize();
        long idx = position & (cap - 1);
        long first = Math.min(n, cap - idx);
        MemorySegment.copy(src, srcOffset, data, idx, first);
        if (first < n) MemorySegment.copy(src, srcOffset + first, data, 0, n - first);
    }

    static void out(MemorySegment data, long position, MemorySegment dst, long dstOffset, long n) {
        long cap = data.byteSize();
        long idx = position & (cap - 1);
        long first = Math.min(n, cap - idx);
        MemorySegment.copy(data, idx, dst, dstOffset, first);
        if (first < n) MemorySegment.copy(data, 0, dst, dstOffset + first, n - first);
    }

    /**
     * Folds {@code n} bytes (whole elements) at ring position {@code position} into {@code acc} at {@code accOffset}.
     * An element cut by the wrap-around (possible after messages whose length is not a multiple of the element size)
     * is reassembled in {@code tmp} (at least 8 bytes).
     */
    static void combineOut(MemorySegment data, long position, MemorySegment acc, long accOffset, long n, Combiner c,
                           MemorySegment tmp) {
        int e = c.elementBytes();
        long cap = data.byteSize();
        long idx = position & (cap - 1);
        long first = Math.min(n, cap - idx);
        long whole = first - first % e;
        if (whole > 0) c.combine(acc.asSlice(accOffset, whole), data.asSlice(idx, whole), whole / e);
        if (whole == n) return;
        long done = whole, from = 0;
        long cut = first - whole;
        if (cut > 0) {
            MemorySegment.copy(data, idx + whole, tmp, 0, cut);
            MemorySegment.copy(data, 0, tmp, cut, e - cut);
            c.combine(acc.asSlice(accOffset + done, e), tmp.asSlice(0, e), 1);
            done += e;
            from = e - cut;
        }
        long rest = n - done;
        if (rest > 0) c.combine(acc.asSlice(accOffset + done, rest), data.asSlice(from, rest), rest / e);
    }
}
