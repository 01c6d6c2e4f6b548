package dev.jtrain.tensor;

import dev.jtrain.autograd.AccumulateGrad;
import dev.jtrain.autograd.Engine;
import dev.jtrain.autograd.F;
import dev.jtrain.autograd.Node;
import dev.jtrain.nn.FlatParameters;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * An fp32 n-dimensional array: a view (offset, shape, strides) over a {@code float[]} storage, plus the
 * autograd state of a graph node.
 *
 * <p>Views ({@link #reshape}, {@link #transpose}, {@link #narrow}) share storage; kernels require contiguous
 * inputs and call {@link #contiguous()}, which copies only when the layout demands it. Parameters of a model
 * are views into one flat buffer (see {@code FlatParameters}), so a gradient bucket or a ZeRO
 * shard is a plain slice of an array.
 *
 * <p>Threading: a tensor is not thread-safe; kernels parallelise internally.
 */
public final class Tensor {
    private float[] data;
    private int offset;
    private final int[] shape;
    private final int[] strides;

    // autograd state
    private boolean requiresGrad;
    private Tensor grad;
    private Node gradFn;
    private AccumulateGrad accumulator;
    private List<Consumer<Tensor>> postAccumulateGradHooks;
    private String name;

    private Tensor(float[] data, int offset, int[] shape, int[] strides) {
        this.data = data;
        this.offset = offset;
        this.shape = shape;
        this.strides = strides;
    }

    // ---- construction ----

    public static Tensor of(float[] data, int... shape) {
        int n = Shape.numel(shape);
        if (n != data.length)
            throw new IllegalArgumentException("data length " + data.length + " does not match shape " + Shape.str(shape));
        return new Tensor(data, 0, shape.clone(), Shape.contiguousStrides(shape));
    }

    /** A view over {@code data[offset, offset+numel)} with a contiguous layout. */
    public static Tensor view(float[] data, int offset, int... shape) {
        int n = Shape.numel(shape);
        if (offset < 0 || offset + n > data.length)
            throw new IllegalArgumentException("view out of bounds: offset=" + offset + ", numel=" + n + ", storage=" + data.length);
        return new Tensor(data, offset, shape.clone(), Shape.contiguousStrides(shape));
    }

    public static Tensor strided(float[] data, int offset, int[] shape, int[] strides) {
        return new Tensor(data, offset, shape.clone(), strides.clone());
    }

    public static Tensor zeros(int... shape) {
        return new Tensor(StepArena.floats(Shape.numel(shape)), 0, shape.clone(), Shape.contiguousStrides(shape));
    }

    /**
     * A contiguous tensor whose contents are unspecified: for outputs the caller writes in full (a GEMM with
     * beta 0, a kernel that sets every element), which spares zeroing an array the step arena hands out again.
     */
    public static Tensor empty(int... shape) {
        return new Tensor(StepArena.uninitializedFloats(Shape.numel(shape)), 0, shape.clone(), Shape.contiguousStrides(shape));
    }

    public static Tensor full(float value, int... shape) {
        Tensor t = zeros(shape);
        Arrays.fill(t.data, value);
        return t;
    }

    public static Tensor scalar(float value) {
        return of(new float[]{value});
    }

    public static Tensor randn(Rng rng, float std, int... shape) {
        Tensor t = zeros(shape);
        t.fillNormal(rng, std);
        return t;
    }

    /** Fills this contiguous tensor, element after element, from N(0, std²) drawn from {@code rng}; in place. */
    public void fillNormal(Rng rng, float std) {
        if (!isContiguous()) throw new IllegalStateException("fillNormal needs a contiguous tensor: " + this);
        int n = numel();
        for (int i = 0; i < n; i++) data[offset + i] = (float) (rng.nextGaussian() * std);
    }

    public static Tensor rand(Rng rng, float lo, float hi, int... shape) {
        Tensor t = zeros(shape);
        for (int i = 0; i < t.data.length; i++) t.data[i] = lo + (hi - lo) * rng.nextFloat();
        return t;
    }

    // ---- layout ----

    public float[] data() { return data; }

    public int offset() { return offset; }

    public int[] shape() { return shape.clone(); }

    public int[] strides() { return strides.clone(); }

    public int dim() { return shape.length; }

    public int size(int d) { return shape[d < 0 ? d + shape.length : d]; }

    public int numel() { return Shape.numel(shape); }

    public boolean isContiguous() {
        int expect = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            if (shape[i] != 1 && strides[i] != expect) return false;
            expect *= shape[i];
        }
        return true;
    }

    /** Re-points this (leaf, contiguous) tensor at {@code storage[offset...]}, copying its current values there. */
    public void moveStorage(float[] storage, int newOffset) {
        if (!isContiguous()) throw new IllegalStateException("moveStorage needs a contiguous tensor: " + this);
        if (gradFn != null) throw new IllegalStateException("moveStorage only applies to leaf tensors: " + this);
        int n = numel();
        System.arraycopy(data, offset, storage, newOffset, n);
        this.data = storage;
        this.offset = newOffset;
    }

    /**
     * Re-points this (leaf, contiguous) tensor at {@code storage[offset...]} without copying: a sharded strategy
     * points parameters at gathered buffers and away again (at an empty array, so a stray read fails loudly).
     */
    public void pointAt(float[] storage, int newOffset) {
        if (!isContiguous()) throw new IllegalStateException("pointAt needs a contiguous tensor: " + this);
        if (gradFn != null) throw new IllegalStateException("pointAt only applies to leaf tensors: " + this);
        this.data = storage;
        this.offset = newOffset;
    }

    public float get(int... idx) {
        return data[index(idx)];
    }

    public void set(float v, int... idx) {
        data[index(idx)] = v;
    }

    private int index(int[] idx) {
        if (idx.length != shape.length)
            throw new IllegalArgumentException("index rank " + idx.length + " != tensor rank " + shape.length);
        int p = offset;
        for (int i = 0; i < idx.length; i++) {
            if (idx[i] < 0 || idx[i] >= shape[i])
                throw new IndexOutOfBoundsException("index " + Arrays.toString(idx) + " out of shape " + Shape.str(shape));
            p += idx[i] * strides[i];
        }
        return p;
    }

    public float item() {
        if (numel() != 1) throw new IllegalStateException("item() needs a one-element tensor, shape " + Shape.str(shape));
        return data[offset];
    }

    /** A fresh contiguous copy of the values. */
    public float[] toArray() {
        Tensor c = contiguous();
        return Arrays.copyOfRange(c.data, c.offset, c.offset + c.numel());
    }

    /** Same values, contiguous layout; returns {@code this} when already contiguous. Differentiable. */
    public Tensor contiguous() {
        return isContiguous() ? this : F.contiguous(this);
    }

    /** Copies values (not autograd state) into a new contiguous tensor, whatever the layout. */
    public Tensor copyData() {
        float[] out = StepArena.uninitializedFloats(numel());
        copyTo(out, 0);
        return of(out, shape);
    }

    /** Writes the values in row-major order into {@code dst[dstOff...]}. Iterative over dimensions. */
    public void copyTo(float[] dst, int dstOff) {
        int n = numel();
        if (isContiguous()) {
            System.arraycopy(data, offset, dst, dstOff, n);
            return;
        }
        int nd = shape.length;
        int[] idx = new int[nd];
        int src = offset;
        for (int i = 0; i < n; i++) {
            dst[dstOff + i] = data[src];
            for (int d = nd - 1; d >= 0; d--) {
                idx[d]++;
                src += strides[d];
                if (idx[d] < shape[d]) break;
                src -= strides[d] * shape[d];
                idx[d] = 0;
            }
        }
    }

    /** View with a new shape (one -1 allowed). Copies first if the layout is not contiguous. Differentiable. */
    public Tensor reshape(int... newShape) {
        return F.reshape(this, newShape);
    }

    public Tensor transpose(int d0, int d1) {
        return F.transpose(this, d0, d1);
    }

    /** View of indices [start, end) along {@code dim}. Differentiable. */
    public Tensor narrow(int dim, int start, int length) {
        return F.narrow(this, dim, start, length);
    }

    /** Raw view helpers used by the differentiable shape ops; no autograd. */
    public Tensor viewAs(int[] newShape, int[] newStrides, int newOffset) {
        return new Tensor(data, newOffset, newShape, newStrides);
    }

    // ---- autograd ----

    public boolean requiresGrad() { return requiresGrad; }

    /** Marks a leaf as requiring gradients (parameters, inputs under test). Returns this. */
    public Tensor requiresGrad(boolean value) {
        if (gradFn != null && !value) throw new IllegalStateException("cannot clear requiresGrad of a non-leaf tensor");
        this.requiresGrad = value;
        return this;
    }

    public boolean isLeaf() { return gradFn == null; }

    public Tensor grad() { return grad; }

    public void setGrad(Tensor g) {
        if (g != null && !Arrays.equals(g.shape, shape))
            throw new IllegalArgumentException("grad shape " + Shape.str(g.shape) + " != tensor shape " + Shape.str(shape));
        this.grad = g;
    }

    public Node gradFn() { return gradFn; }

    /** Called by ops when recording this tensor as the output of {@code fn}. */
    public void setGradFn(Node fn) {
        this.gradFn = fn;
        this.requiresGrad = fn != null;
    }

    /** The node that accumulates into this leaf's {@code grad}; one per leaf so hooks fire once per backward. */
    public AccumulateGrad accumulator() {
        if (gradFn != null) throw new IllegalStateException("accumulator() is only for leaf tensors");
        if (accumulator == null) accumulator = new AccumulateGrad(this);
        return accumulator;
    }

    /**
     * Registers a hook called the moment this leaf's gradient for the current backward is final (accumulated into
     * {@link #grad()}), in the order backward finalises leaves. DDP and ZeRO launch their collectives here.
     */
    public void registerPostAccumulateGradHook(Consumer<Tensor> hook) {
        if (!isLeaf()) throw new IllegalStateException("post-accumulate-grad hooks are only for leaf tensors");
        if (postAccumulateGradHooks == null) postAccumulateGradHooks = new ArrayList<>();
        postAccumulateGradHooks.add(hook);
    }

    public List<Consumer<Tensor>> postAccumulateGradHooks() {
        return postAccumulateGradHooks == null ? List.of() : postAccumulateGradHooks;
    }

    /** Backward from a scalar: d(this)/d(this) = 1. */
    public void backward() {
        if (numel() != 1)
            throw new IllegalStateException("backward() without a gradient needs a scalar, shape " + Shape.str(shape));
        backward(Tensor.full(1f, shape));
    }

    public void backward(Tensor gradOutput) {
        Engine.backward(this, gradOutput);
    }

    /** Same storage, no autograd history. */
    /**
     * Done with this tensor's storage, as the last {@code del} of it would be in PyTorch: inside a {@link StepArena}
     * scope the array goes back to the pool as soon as no autograd node still keeps it for backward, so a model that
     * releases its intermediates holds only what backward needs. Call once per tensor an op returned (not again for
     * a view of it) and use neither afterwards. Outside a scope, or on arrays the scope did not hand out, nothing
     * happens.
     */
    public void release() {
        StepArena.release(data);
    }

    public Tensor detach() {
        return new Tensor(data, offset, shape, strides);
    }

    public String name() { return name; }

    public Tensor setName(String name) {
        this.name = name;
        return this;
    }

    // ---- op sugar (see F for the full set) ----

    public Tensor add(Tensor o) { return F.add(this, o); }

    public Tensor sub(Tensor o) { return F.sub(this, o); }

    public Tensor mul(Tensor o) { return F.mul(this, o); }

    public Tensor mul(float s) { return F.scale(this, s); }

    public Tensor matmul(Tensor o) { return F.matmul(this, o); }

    public Tensor sum() { return F.sum(this); }

    public Tensor mean() { return F.mean(this); }

    @Override
    public String toString() {
        return "Tensor" + (name != null ? "(" + name + ")" : "") + Shape.str(shape)
                + (gradFn != null ? " grad_fn=" + gradFn.name() : requiresGrad ? " requires_grad" : "");
    }
}
