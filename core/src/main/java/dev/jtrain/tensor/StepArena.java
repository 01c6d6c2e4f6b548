package dev.jtrain.tensor;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Recycles the float arrays of a training step's temporaries (activations, gradients, scratch). A step allocates the
 * same set of array sizes every time, and all of them die at the end of the step; left to the garbage collector,
 * each young collection copies the live activations (hundreds of MiB), which on the small preset cost more than
 * half of the step time. Like PyTorch's caching allocator, the arena keeps freed blocks by size and hands them out
 * again, so steady-state steps allocate nothing.
 *
 * <p>Usage: {@code try (var s = arena.open()) { forward, backward, read loss.item() }} — every tensor created on this
 * thread inside the scope must not be used after it closes (its storage is reused by the next step). Tensors created
 * outside any scope (parameters, optimizer state) are ordinary heap arrays.
 *
 * <p>Threading: a scope belongs to the thread that opened it; allocations from other threads are not pooled.
 */
public final class StepArena {
    private static final ThreadLocal<StepArena> ACTIVE = new ThreadLocal<>();

    private final Map<Integer, ArrayDeque<float[]>> free = new HashMap<>();
    private final List<float[]> lent = new ArrayList<>();
    private long pooledFloats;

    /** Starts a scope on the current thread; scopes do not nest. */
    public Scope open() {
        if (ACTIVE.get() != null) throw new IllegalStateException("a StepArena scope is already open on this thread");
        ACTIVE.set(this);
        return () -> {
            ACTIVE.remove();
            for (float[] a : lent) free.computeIfAbsent(a.length, k -> new ArrayDeque<>()).push(a);
            lent.clear();
        };
    }

    /** A zero-filled array of length n: from the active scope's pool when there is one, else a new array. */
    public static float[] floats(int n) {
        StepArena arena = ACTIVE.get();
        if (arena == null || n < 1024) return new float[n];
        ArrayDeque<float[]> q = arena.free.get(n);
        float[] a = q == null ? null : q.poll();
        if (a == null) {
            a = new float[n];
            arena.pooledFloats += n;
        } else {
            Arrays.fill(a, 0f);
        }
        arena.lent.add(a);
        return a;
    }

    /** Bytes held by this arena (lent and free). */
    public long pooledBytes() {
        return pooledFloats * Float.BYTES;
    }

    /** Ends a scope: every array handed out inside it returns to the pool. */
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
