package dev.jtrain.comm.transport;

import java.lang.foreign.MemorySegment;

/**
 * Folds received elements into a destination in place: {@code acc = acc (op) in}, element-wise. Handed to
 * {@link Transport#sendRecvCombine} so that a transport can apply the reduction to bytes as they arrive (from the
 * shared-memory ring, or from a small socket staging buffer that stays in cache) instead of landing the whole
 * message in a scratch buffer that is then read again — the "reduce on receive" fusion of NCCL's primitives.
 *
 * <p>Implementations are stateless and may be called from any thread (a transport's reader, or whichever caller
 * drives a shared-memory ring), once per run of whole elements.
 */
public interface Combiner {
    /** Bytes per element; a transport only ever passes whole elements. */
    int elementBytes();

    /** {@code acc[i] = acc[i] (op) in[i]} for {@code elements} elements; both segments hold at least that many. */
    void combine(MemorySegment acc, MemorySegment in, long elements);

    /**
     * Delivers a message that was buffered before its receive was posted: copied into {@code dst}, or folded into it
     * when {@code c} is not null (then the transport owes no second pass: the buffered copy is read once here).
     */
    static void deliverBuffered(MemorySegment msg, MemorySegment dst, Combiner c) {
        if (c == null) MemorySegment.copy(msg, 0, dst, 0, msg.byteSize());
        else c.combine(dst, msg, msg.byteSize() / c.elementBytes());
    }

    /** Rejects a destination that is not whole elements (its last partial element could never be folded). */
    static void requireWholeElements(MemorySegment acc, Combiner c) {
        if (acc.byteSize() % c.elementBytes() != 0) {
            throw new IllegalArgumentException("sendRecvCombine: destination of " + acc.byteSize() + " bytes is not a whole number of "
                    + c.elementBytes() + "-byte elements");
        }
    }
}
