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

    /** Rejects a destination that is not whole elements (its last partial element could never be folded). */
    static void requireWholeElements(MemorySegment acc, Combiner c) {
        if (acc.byteSize() % c.elementBytes() != 0) {
            throw new IllegalArgumentException("sendRecvCombine: destination of " + acc.byteSize() + " bytes is not a whole number of "
                    + c.elementBytes() + "-byte elements");
        }
    }
}
