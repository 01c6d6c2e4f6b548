package dev.jtrain.autograd;

import dev.jtrain.tensor.Tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A backward function in the autograd graph: given the gradient of its output, returns the gradients of its
 * inputs (same order as the inputs it was created with; null where an input needs none).
 *
 * <p>Nodes are ordered by a global creation sequence number; the engine runs ready nodes latest-created first,
 * so backward proceeds from the last layer to the first (PyTorch's engine does the same), which is the order
 * DDP buckets and ZeRO reduce-scatters are launched in.
 */
public abstract class Node {
    private static final AtomicLong SEQUENCE = new AtomicLong();

    final long sequence;
    final Node[] next;
    private long savedBytes;
    private List<Saved> kept;

    protected Node(Tensor... inputs) {
        this.sequence = SEQUENCE.incrementAndGet();
        this.next = new Node[inputs.length];
        for (int i = 0; i < inputs.length; i++) next[i] = edge(inputs[i]);
    }

    static Node edge(Tensor t) {
        if (t == null) return null;
        if (t.gradFn() != null) return t.gradFn();
        return t.requiresGrad() ? t.accumulator() : null;
    }

    /** Gradients with respect to the inputs, each contiguous and of the input's shape (or null). */
    protected abstract Tensor[] apply(Tensor gradOutput);

    /** True for input i when its gradient is needed (skip computing the rest). */
    /**
     * What a node returns for input {@code i} when it has added that input's gradient into the leaf's own gradient
     * itself ({@link #leafGradient}): the engine then has nothing to hold or add for it.
     */
    static final Tensor ACCUMULATED_IN_PLACE = Tensor.scalar(0f);

    /**
     * The gradient of input {@code i} when that input is a leaf that already has one (contiguous, of its shape):
     * the node may add its contribution straight into it and return {@link #ACCUMULATED_IN_PLACE}, instead of
     * returning a new array the engine would add in and drop. Else null. This matches what the engine does with any
     * contribution to such a leaf ({@link AccumulateGrad#accumulateNow}), so the two may mix in one backward. A
     * linear layer's weight gradient is the one worth it: for a tied vocabulary x width head, one array that size.
     */
    protected final Tensor leafGradient(int i) {
        if (!(next[i] instanceof AccumulateGrad acc)) return null;
        Tensor g = acc.leaf().grad();
        return g != null && g.isContiguous() && java.util.Arrays.equals(g.shape(), acc.leaf().shape()) ? g : null;
    }

    protected final boolean needsGrad(int i) {
        return next[i] != null;
    }

    /**
     * Whether everything this node computes from its output gradient reads that gradient rounded to bf16 (a bf16
     * product's backward), so whoever produces the gradient may deliver it rounded already.
     */
    boolean readsGradientInBf16() {
        return false;
    }

    /** {@link #readsGradientInBf16} of the node input i's gradient goes to: for ops that pass the gradient on unchanged. */
    final boolean nextReadsGradientInBf16(int i) {
        return next[i] != null && next[i].readsGradientInBf16();
    }

    /** Priority in the ready queue; higher runs first. */
    long priority() {
        return sequence;
    }

    /** Accounts for activation memory this node keeps alive until backward (see {@link SavedMemory}). */
    protected final void saved(long floats) {
        account(floats * Float.BYTES);
    }

    /**
     * Keeps {@code t} for backward, in bf16 when {@code bf16} (see {@link Saved}); accounted, and let go after
     * backward with the rest of this node's saved state.
     */
    final Saved save(Tensor t, boolean bf16) {
        return keep(Saved.of(t, bf16));
    }

    /** Keeps a copy the forward made itself (a kernel that packed its input to bf16 as it read it), as {@link #save}. */
    final Saved keep(Saved s) {
        if (kept == null) kept = new ArrayList<>(2);
        kept.add(s);
        account(s.bytes());
        return s;
    }

    private void account(long bytes) {
        savedBytes += bytes;
        SavedMemory.add(bytes);
    }

    /** Drops references to saved tensors after backward (retain_graph=false). */
    protected void release() {}

    final void releaseSaved() {
        release();
        if (kept != null) for (Saved s : kept) s.clear();
        kept = null;
        SavedMemory.add(-savedBytes);
        savedBytes = 0;
    }

    public String name() {
        return getClass().getSimpleName();
    }
}
