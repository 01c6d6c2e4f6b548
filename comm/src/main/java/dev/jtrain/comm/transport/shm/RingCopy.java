package dev.jtrain.comm.transport.shm;

import java.lang.foreign.MemorySegment;

/** Copies into and out of a ring's data area, splitting at the wrap-around point. Stateless. */
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
}
