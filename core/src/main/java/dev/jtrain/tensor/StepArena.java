package dev.jtrain.tensor;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Recycles the arrays of a training step's temporaries (activations, gradients, scratch). A step allocates the
 * same set of array sizes every time, and all of them die at the end of the step; left to the garbage collector,
 * each young collection copies the live activations (hundreds of MiB), which on the small preset cost more than
 * half of the step time. Like PyTorch's caching allocator, the arena keeps freed blocks by size and hands them out
 * again, so steady-state steps allocate nothing.
 *
 * <p>Within a step an array can go back early, which is what makes the step's memory follow what is still needed
 * rather than everything it ever allocated. Java has no reference counts, so the arena keeps them: an array is
 * handed out with one holder (its creator); {@link #retain} adds one (an autograd node that saves it for backward,
 * a gradient the engine holds), {@link #release} drops one, and at zero the array is free for the next request of
 * its size. Releasing is optional: whatever is still out when the scope closes goes back then.
 *
 * <p>Usage: {@code try (var s = arena.open()) { forward, backward, read loss.item() }} — every tensor created on this
 * thread inside the scope must not be used after it closes (its storage is reused by the next step), nor after its
 * last holder released it. Tensors created outside any scope (parameters, optimizer state) are ordinary heap arrays,
 * and {@link #retain}/{@link #release} ignore them.
 *
 * <p>Threading: a scope belongs to the thread that opened it; allocations from other threads are not pooled, and
 * their retain/release calls do nothing.
 */
public final class StepArena {
    private static final ThreadLocal<StepArena> ACTIVE = new ThreadLocal<>();
    /** Below this many elements an array is cheaper to allocate than to track. */
    private static final int MIN_POOLED = 1024;

    private final Map<Integer, ArrayDeque<float[]>> freeFloats = new HashMap<>();
    private final Map<Integer, ArrayDeque<int[]>> freeInts = new HashMap<>();
    private final IdentityHashMap<Object, int[]> holders = new IdentityHashMap<>();
    /** Growth of the pool that is worth a full collection to move out of the young generation (see {@link #settle}). */
    private static final long SETTLE_BYTES = 16L << 20;

    private long pooledBytes, lentBytes, peakLentBytes, settledBytes;

    /** Starts a scope on the current thread; scopes do not nest. */
    public Scope open() {
        if (ACTIVE.get() != null) throw new IllegalStateException("a StepArena scope is already open on this thread");
        ACTIVE.set(this);
        peakLentBytes = lentBytes;
        return () -> {
            ACTIVE.remove();
            for (Object a : holders.keySet()) recycle(a);
            holders.clear();
            lentBytes = 0;
        };
    }

    /** A zero-filled float array of length n: from the active scope's pool when there is one, else a new array. */
    public static float[] floats(int n) {
        return take(n, true);
    }

    /** A float array of length n whose contents are unspecified (the caller overwrites all of it), pooled like {@link #floats}. */
    public static float[] uninitializedFloats(int n) {
        return take(n, false);
    }

    private static float[] take(int n, boolean zeroed) {
        StepArena arena = ACTIVE.get();
        if (arena == null || n < MIN_POOLED) return new float[n];
        float[] a = arena.pooled(arena.freeFloats, n, float[]::new, Float.BYTES);
        if (zeroed) Arrays.fill(a, 0f);
        return a;
    }

    /** An int array of length n (contents unspecified: callers overwrite it), pooled like {@link #floats}. */
    public static int[] ints(int n) {
        StepArena arena = ACTIVE.get();
        if (arena == null || n < MIN_POOLED) return new int[n];
        return arena.pooled(arena.freeInts, n, int[]::new, Integer.BYTES);
    }

    /** A free array of length n from {@code free}, or a new one; lent with one holder. */
    private <A> A pooled(Map<Integer, ArrayDeque<A>> free, int n, IntFunction<A> make, int elementBytes) {
        ArrayDeque<A> q = free.get(n);
        A a = q == null ? null : q.poll();
        if (a == null) {
            a = make.apply(n);
            pooledBytes += (long) n * elementBytes;
        }
        lend(a, (long) n * elementBytes);
        return a;
    }

    /** One more holder of an array this thread's scope handed out (anything else: no effect). */
    public static void retain(Object array) {
        StepArena arena = ACTIVE.get();
        if (arena == null) return;
        int[] count = arena.holders.get(array);
        if (count != null) count[0]++;
    }

    /**
     * One holder fewer; the last one's release returns the array to the pool at once, so no one may read or write
     * it afterwards. Arrays this thread's scope did not hand out are ignored.
     */
    public static void release(Object array) {
        StepArena arena = ACTIVE.get();
        if (arena == null) return;
        int[] count = arena.holders.get(array);
        if (count == null) return;
        if (--count[0] > 0) return;
        arena.holders.remove(array);
        arena.lentBytes -= bytes(array);
        arena.recycle(array);
    }

    /**
     * Moves what the arena pooled since the last call into the old generation, with one full collection, when the pool
     * grew by at least 16 MiB; otherwise does nothing. Call it between steps, outside a scope: after the first step,
     * once the pool holds the step's arrays (and the optimizer has made its state).
     *
     * <p>Why: pooled arrays live for the whole run, but they are born in the young generation, and a generational
     * collector copies live young objects at every young collection until it tenures them (ParallelGC: up to 15
     * times). Hundreds of MiB of activations copied that way cost 0.1-1 s per pause on two shared cores, a pause in
     * each of the first several steps (bench/MEASUREMENTS.md, "Young collections of the step arena"). Tenured at
     * once, they are never copied again, and young collections see only a step's short-lived garbage. It is the
     * generational hypothesis applied to an allocator that knows which of its objects are old.
     *
     * @return whether it collected
     */
    public boolean settle() {
        if (pooledBytes - settledBytes < SETTLE_BYTES) return false;
        settledBytes = pooledBytes;
        System.gc();
        return true;
    }

    /** Bytes held by this arena (lent and free). */
    public long pooledBytes() {
        return pooledBytes;
    }

    /**
     * The most bytes lent at once since the current (or last) scope opened: the step's working set of activations,
     * gradients and scratch, which releasing early lowers.
     */
    public long peakLentBytes() {
        return peakLentBytes;
    }

    private void lend(Object a, long bytes) {
        holders.put(a, new int[]{1});
        lentBytes += bytes;
        peakLentBytes = Math.max(peakLentBytes, lentBytes);
    }

    private void recycle(Object a) {
        if (a instanceof float[] f) freeFloats.computeIfAbsent(f.length, k -> new ArrayDeque<>()).push(f);
        else if (a instanceof int[] i) freeInts.computeIfAbsent(i.length, k -> new ArrayDeque<>()).push(i);
    }

    private static long bytes(Object a) {
        return a instanceof float[] f ? (long) f.length * Float.BYTES : (long) ((int[]) a).length * Integer.BYTES;
    }

    /** Ends a scope: every array handed out inside it returns to the pool. */
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
