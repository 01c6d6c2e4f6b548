package dev.jtrain.autograd;

import dev.jtrain.tensor.Tensor;

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
    protected final boolean needsGrad(int i) {
        return next[i] != null;
    }

    /** Priority in the ready queue; higher runs first. */
    long priority() {
        return sequence;
    }

    /** Accounts for activation memory this node keeps alive until backward (see {@link SavedMemory}). */
    protected final void saved(long floats) {
        long bytes = floats * Float.BYTES;
        savedBytes += bytes;
        SavedMemory.add(bytes);
    }

    /** Drops references to saved tensors after backward (retain_graph=false). */
    protected void release() {}

    final void releaseSaved() {
        release();
        SavedMemory.add(-savedBytes);
        savedBytes = 0;
    }

    public String name() {
        return getClass().getSimpleName();
    }
}
