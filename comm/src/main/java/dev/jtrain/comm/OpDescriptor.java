package dev.jtrain.comm;

import dev.jtrain.comm.algo.Algorithm;
import dev.jtrain.comm.algo.Collective;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What one rank asked for at one sequence number. Its 32-byte fingerprint is what ranks exchange in debug mode to
 * detect mismatched collectives:
 * <pre>
 *   0 int kind | 4 int dtype | 8 long seq | 16 long count | 24 int reduceOp (-1) | 28 int root (-1)
 * </pre>
 *
 * @param count     elements per rank's contribution (all-reduce: the vector; all-gather etc.: one block)
 * @param algorithm the algorithm chosen for the call (by cost or forced), or null for internal operations
 */
record OpDescriptor(Collective kind, long seq, long count, DType dtype, ReduceOp op, int root, Algorithm algorithm) {
    static final int FINGERPRINT_BYTES = 32;

    void writeFingerprint(MemorySegment s) {
        s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, kind.ordinal());
        s.set(ValueLayout.JAVA_INT_UNALIGNED, 4, dtype == null ? -1 : dtype.ordinal());
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, seq);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, count);
        s.set(ValueLayout.JAVA_INT_UNALIGNED, 24, op == null ? -1 : op.ordinal());
        s.set(ValueLayout.JAVA_INT_UNALIGNED, 28, root);
    }

    /** Reads a fingerprint back (the algorithm is not part of it: it follows from the rest). */
    static OpDescriptor readFingerprint(MemorySegment s) {
        int k = s.get(ValueLayout.JAVA_INT_UNALIGNED, 0), d = s.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
        int o = s.get(ValueLayout.JAVA_INT_UNALIGNED, 24);
        Collective kind = k >= 0 && k < Collective.values().length ? Collective.values()[k] : null;
        if (kind == null) throw new CommException("corrupt collective fingerprint: kind=" + k);
        return new OpDescriptor(kind, s.get(ValueLayout.JAVA_LONG_UNALIGNED, 8), s.get(ValueLayout.JAVA_LONG_UNALIGNED, 16),
                d < 0 ? null : DType.values()[d], o < 0 ? null : ReduceOp.values()[o],
                s.get(ValueLayout.JAVA_INT_UNALIGNED, 28), null);
    }

    OpDescriptor withoutAlgorithm() { return new OpDescriptor(kind, seq, count, dtype, op, root, null); }

    /** Same call, ignoring the algorithm. */
    boolean matches(OpDescriptor o) {
        return kind == o.kind && seq == o.seq && count == o.count && dtype == o.dtype && op == o.op && root == o.root;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder(kind.apiName()).append(" #").append(seq).append(" (count=").append(count);
        if (dtype != null) b.append(" dtype=").append(dtype);
        if (op != null) b.append(" op=").append(op);
        if (root >= 0) b.append(" root=").append(root);
        if (algorithm != null) b.append(" algo=").append(algorithm.name());
        return b.append(')').toString();
    }
}
