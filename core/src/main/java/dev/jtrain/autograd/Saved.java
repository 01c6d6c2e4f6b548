package dev.jtrain.autograd;

import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;

/**
 * A tensor a node keeps for its backward: the fp32 tensor itself (held in the step arena until the node's backward
 * has run), or a bf16 copy at half the bytes. A node asks for bf16 only where its backward reads the tensor through
 * bf16 anyway, or where autocast would have kept it in bf16 (GELU's input, which autocast's bf16 linear produced):
 * the inputs of bf16 matmuls are rounded to bf16 by the GEMM, so keeping them rounded changes no result
 * (Micikevicius et al. 2018 keep fp16 activations for the same reason; Kalamkar et al. 2019 for bf16).
 */
final class Saved {
    private final int[] shape;
    private final int numel;
    private Tensor fp32;
    private int[] words;

    private Saved(int[] shape, Tensor fp32, int[] words) {
        this.shape = shape;
        this.numel = Shape.numel(shape);
        this.fp32 = fp32;
        this.words = words;
    }

    /** Keeps {@code t} as it is (a view stays a view), or a contiguous copy rounded to bf16 when {@code bf16}. */
    static Saved of(Tensor t, boolean bf16) {
        if (!bf16) {
            StepArena.retain(t.data());
            return new Saved(t.shape(), t.detach(), null);
        }
        Tensor c = t.contiguous().detach();
        int[] w = StepArena.ints(Bf16.packedWords(c.numel()));
        Bf16.pack(c.data(), c.offset(), c.numel(), w);
        if (c.data() != t.data()) StepArena.release(c.data());
        return new Saved(c.shape(), null, w);
    }

    /**
     * A bf16 copy a kernel already wrote in {@link Bf16#pack}'s layout (as it read the tensor for its own forward,
     * which spares reading it a second time); {@code words} comes from the step arena and is now this copy's.
     */
    static Saved ofBf16Words(int[] shape, int[] words) {
        if (words.length < Bf16.packedWords(Shape.numel(shape))) {
            throw new IllegalArgumentException("bf16 copy of " + Shape.str(shape) + " needs " + Bf16.packedWords(Shape.numel(shape))
                    + " words, got " + words.length);
        }
        return new Saved(shape.clone(), null, words);
    }

    /**
     * The bf16 words in {@link Bf16#pack}'s layout, for a kernel that widens them piece by piece as it reads them
     * (no fp32 copy of the whole tensor); null for an fp32 copy.
     */
    int[] bf16Words() {
        if (words == null && fp32 == null) throw new IllegalStateException("a saved tensor was read after its node released it");
        return words;
    }

    /** Bytes this copy holds. */
    long bytes() {
        return words != null ? (long) words.length * Integer.BYTES : (long) numel * Float.BYTES;
    }

    boolean isBf16() {
        return words != null;
    }

    /**
     * The tensor in fp32: the kept one as it was, or the bf16 copy widened into a fresh contiguous array, which the
     * caller gives back with {@link #done} as soon as it has read it.
     */
    Tensor get() {
        if (words == null && fp32 == null) throw new IllegalStateException("a saved tensor was read after its node released it");
        if (fp32 != null) return fp32;
        float[] out = StepArena.uninitializedFloats(numel);
        Bf16.unpack(words, numel, out, 0);
        return Tensor.view(out, 0, shape);
    }

    /** Gives back what {@link #get} widened (nothing for an fp32 tensor, which stays kept until {@link #clear}). */
    void done(Tensor fromGet) {
        if (words != null) StepArena.release(fromGet.data());
    }

    /** Lets the kept storage go (after backward: retain_graph=false). */
    void clear() {
        if (fp32 != null) StepArena.release(fp32.data());
        if (words != null) StepArena.release(words);
        fp32 = null;
        words = null;
    }
}
