package dev.jtrain.tensor.kernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Packing buffers of the bf16 workspaces, off the heap on 64-byte boundaries. Why not Java arrays: an array's data
 * starts 16 bytes into its object, and AMX tile rows (64 bytes) that straddle two cache lines halved the tile kernel's
 * speed (1,208-1,278 against 659 GFLOP/s for the same loop nest, bench/MEASUREMENTS.md, "AMX"); and the packers' Vector
 * API stores into a heap segment ({@code MemorySegment.ofArray}) were not intrinsified by C2 ({@code intoMemorySegment}
 * ran its lane-by-lane fallback, ~6% of a `small` bf16 step on Zen 4, bench/MEASUREMENTS.md, session 40), while into a
 * native segment each is one store. Freed with the workspace that holds them.
 */
final class PackBuffers {
    private PackBuffers() {}

    /** {@code bytes} of buffer off the heap, on a 64-byte boundary. */
    static MemorySegment aligned(long bytes) {
        return Arena.ofAuto().allocate(Math.max(bytes, 64), 64);
    }

    /** {@code seg} if it holds {@code bytes}, else a new aligned buffer of that size. */
    static MemorySegment atLeast(MemorySegment seg, long bytes) {
        return seg.byteSize() >= bytes ? seg : aligned(bytes);
    }
}
