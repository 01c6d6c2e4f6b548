package dev.jtrain.comm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * Debug-mode check of the buffer contract: checksums of the operation's buffers taken at issue, compared when the
 * operation starts (any buffer) and when it ends (input-only buffers). Only buffers up to {@link #MAX_BYTES} in
 * total are checked, to keep the cost small; the hash is a 64-bit multiply-xor over 8-byte words.
 */
final class BufferGuard {
    static final long MAX_BYTES = 1 << 20;
    static final BufferGuard NONE = new BufferGuard(List.of(), List.of());

    private final List<MemorySegment> inputs, outputs;
    private final long[] inputSums, outputSums;

    private BufferGuard(List<MemorySegment> inputs, List<MemorySegment> outputs) {
        this.inputs = inputs;
        this.outputs = outputs;
        this.inputSums = inputs.stream().mapToLong(BufferGuard::hash).toArray();
        this.outputSums = outputs.stream().mapToLong(BufferGuard::hash).toArray();
    }

    /** @param inputs buffers the operation only reads; @param outputs buffers it writes (or reads and writes) */
    static BufferGuard of(boolean enabled, List<MemorySegment> inputs, List<MemorySegment> outputs) {
        if (!enabled) return NONE;
        long total = 0;
        for (MemorySegment s : inputs) total += s.byteSize();
        for (MemorySegment s : outputs) total += s.byteSize();
        return total <= MAX_BYTES ? new BufferGuard(inputs, outputs) : NONE;
    }

    /** A complaint if any buffer changed since issue, else null. */
    String checkAtStart() {
        for (int i = 0; i < inputs.size(); i++) if (hash(inputs.get(i)) != inputSums[i]) return "an input buffer was modified between issue and start";
        for (int i = 0; i < outputs.size(); i++) if (hash(outputs.get(i)) != outputSums[i]) return "a buffer was modified between issue and start";
        return null;
    }

    String checkAtEnd() {
        for (int i = 0; i < inputs.size(); i++) if (hash(inputs.get(i)) != inputSums[i]) return "an input buffer was modified while the operation ran";
        return null;
    }

    static long hash(MemorySegment s) {
        long h = 0x9E3779B97F4A7C15L, n = s.byteSize(), i = 0;
        for (; i + 8 <= n; i += 8) h = (h ^ s.get(ValueLayout.JAVA_LONG_UNALIGNED, i)) * 0xBF58476D1CE4E5B9L;
        for (; i < n; i++) h = (h ^ s.get(ValueLayout.JAVA_BYTE, i)) * 0x94D049BB133111EBL;
        return h;
    }
}
