package dev.jtrain.nn;

import dev.jtrain.tensor.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * All parameters of a model in one contiguous float array and all gradients in another (llm.c's
 * malloc_and_point_parameters): each parameter and its grad are views at the same offset. DDP buckets and ZeRO
 * shards are then plain index ranges, and the optimizer walks one array.
 *
 * <p>Each parameter starts on a 16-float (64-byte) boundary so vector loads of every parameter are aligned.
 */
public final class FlatParameters {
    public static final int ALIGN_FLOATS = 16;

    /** One parameter's place in the flat buffers. */
    public record Slot(String name, Tensor param, int offset, int numel) {}

    private float[] data;
    private float[] grad;
    private final int size;
    private final List<Slot> slots;

    private FlatParameters(float[] data, float[] grad, List<Slot> slots, int size) {
        this.data = data;
        this.grad = grad;
        this.slots = slots;
        this.size = size;
    }

    /** Moves every parameter of {@code module} into one buffer (values preserved) and gives each a zeroed grad view. */
    public static FlatParameters of(Module module) {
        Map<String, Tensor> named = module.namedParameters();
        long total = 0;
        for (Tensor t : named.values()) total = align(total) + t.numel();
        total = align(total);
        if (total > Integer.MAX_VALUE - 64) throw new IllegalArgumentException("model too large for one flat buffer: " + total + " floats");
        float[] data = new float[(int) total];
        float[] grad = new float[(int) total];
        List<Slot> slots = new ArrayList<>();
        int off = 0;
        for (var e : named.entrySet()) {
            off = (int) align(off);
            Tensor p = e.getValue();
            p.moveStorage(data, off);
            p.setGrad(Tensor.view(grad, off, p.shape()));
            slots.add(new Slot(e.getKey(), p, off, p.numel()));
            off += p.numel();
        }
        return new FlatParameters(data, grad, Collections.unmodifiableList(slots), data.length);
    }

    /**
     * The flat layout of {@code module}'s parameters (the offsets {@link #of} would give them) without the buffers:
     * every parameter stays in its own storage. ZeRO-3 starts from this, so a rank never holds a second full copy of
     * the model while it takes its shards.
     */
    public static FlatParameters layoutOf(Module module) {
        List<Slot> slots = new ArrayList<>();
        long off = 0;
        for (var e : module.namedParameters().entrySet()) {
            off = align(off);
            if (off + e.getValue().numel() > Integer.MAX_VALUE - 64)
                throw new IllegalArgumentException("model too large for one flat layout: " + (off + e.getValue().numel()) + " floats");
            slots.add(new Slot(e.getKey(), e.getValue(), (int) off, e.getValue().numel()));
            off += e.getValue().numel();
        }
        return new FlatParameters(null, null, Collections.unmodifiableList(slots), (int) align(off));
    }

    /** Whether the parameters live in one flat buffer ({@link #of}), rather than each in its own storage or sharded. */
    public boolean hasDataBuffer() {
        return data != null;
    }

    private static long align(long n) {
        return (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
    }

    public float[] data() {
        if (data == null)
            throw new IllegalStateException("this model's parameters are sharded (ZeRO-3): there is no full parameter buffer");
        return data;
    }

    /**
     * Drops both flat buffers (ZeRO-3 keeps only shards of each; it has pointed the parameters elsewhere first). The
     * slots keep their offsets: the layout shards and checkpoints are described in.
     */
    public void dropBuffers() {
        dropGradientBuffer();
        data = null;
    }

    public float[] grad() {
        if (grad == null)
            throw new IllegalStateException("this model's gradients are sharded (ZeRO-2): there is no full gradient buffer");
        return grad;
    }

    /**
     * Drops the full gradient buffer and detaches every parameter's grad view (ZeRO stage 2 keeps only gradient
     * shards; autograd then creates a transient per-parameter gradient that the sharder consumes in its hook).
     */
    public void dropGradientBuffer() {
        for (Slot s : slots) s.param().setGrad(null);
        grad = null;
    }

    public boolean hasGradientBuffer() {
        return grad != null;
    }

    public List<Slot> slots() { return slots; }

    public int size() { return size; }

    public long parameterCount() {
        long n = 0;
        for (Slot s : slots) n += s.numel();
        return n;
    }

    public void zeroGrad() {
        if (grad != null) Arrays.fill(grad, 0f);
        else for (Slot s : slots) s.param().setGrad(null);
    }
}
