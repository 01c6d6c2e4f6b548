package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

/**
 * The differentiable operations (the counterpart of torch.nn.functional). Each records a backward node when
 * grad mode is on and an input requires grad.
 */
public final class F {
    private F() {}

    public static Tensor add(Tensor a, Tensor b) { return ElementwiseOps.binary(ElementwiseOps.Op.ADD, a, b); }

    public static Tensor sub(Tensor a, Tensor b) { return ElementwiseOps.binary(ElementwiseOps.Op.SUB, a, b); }

    public static Tensor mul(Tensor a, Tensor b) { return ElementwiseOps.binary(ElementwiseOps.Op.MUL, a, b); }

    public static Tensor div(Tensor a, Tensor b) { return ElementwiseOps.binary(ElementwiseOps.Op.DIV, a, b); }

    public static Tensor scale(Tensor x, float s) { return ElementwiseOps.scale(x, s); }

    public static Tensor tanh(Tensor x) {
        return ElementwiseOps.map(x, new ElementwiseOps.Unary() {
            public float f(float v) { return (float) Math.tanh(v); }

            public float df(float v, float y) { return 1 - y * y; }
        }, "Tanh");
    }

    public static Tensor exp(Tensor x) {
        return ElementwiseOps.map(x, new ElementwiseOps.Unary() {
            public float f(float v) { return (float) Math.exp(v); }

            public float df(float v, float y) { return y; }
        }, "Exp");
    }

    public static Tensor log(Tensor x) {
        return ElementwiseOps.map(x, new ElementwiseOps.Unary() {
            public float f(float v) { return (float) Math.log(v); }

            public float df(float v, float y) { return 1f / v; }
        }, "Log");
    }

    public static Tensor sum(Tensor x) { return ReduceOps.sum(x, 1f, "SumBackward"); }

    public static Tensor mean(Tensor x) { return ReduceOps.sum(x, 1f / Math.max(1, x.numel()), "MeanBackward"); }

    public static Tensor matmul(Tensor a, Tensor b) { return MatmulOps.matmul(a, b); }

    /** y = x·Wᵀ + b with W (out, in); b may be null. */
    public static Tensor linear(Tensor x, Tensor w, Tensor b) { return MatmulOps.linear(x, w, b); }

    public static Tensor layerNorm(Tensor x, Tensor w, Tensor b, float eps) { return NormOps.layerNorm(x, w, b, eps); }

    /** GELU, tanh approximation (GPT-2). */
    public static Tensor gelu(Tensor x) { return ActivationOps.gelu(x); }

    /** Softmax over the last dimension. */
    public static Tensor softmax(Tensor x) { return ActivationOps.softmax(x); }

    public static Tensor dropout(Tensor x, float p, Rng rng) { return ActivationOps.dropout(x, p, rng); }

    public static Tensor embedding(Tensor weight, int[] ids, int... idShape) { return EmbeddingOps.embedding(weight, ids, idShape); }

    public static Tensor causalSelfAttention(Tensor qkv, int nHead, float dropout, Rng rng) {
        return AttentionOps.causalSelfAttention(qkv, nHead, dropout, rng);
    }

    public static Tensor crossEntropy(Tensor logits, int[] targets) {
        return CrossEntropyOps.crossEntropy(logits, targets, logits.size(-1));
    }

    /** Cross-entropy over only the first {@code validClasses} columns (the rest are vocabulary padding). */
    public static Tensor crossEntropy(Tensor logits, int[] targets, int validClasses) {
        return CrossEntropyOps.crossEntropy(logits, targets, validClasses);
    }

    public static Tensor reshape(Tensor x, int... shape) { return ShapeOps.reshape(x, shape); }

    public static Tensor transpose(Tensor x, int d0, int d1) { return ShapeOps.transpose(x, d0, d1); }

    public static Tensor narrow(Tensor x, int dim, int start, int length) { return ShapeOps.narrow(x, dim, start, length); }

    public static Tensor contiguous(Tensor x) { return ShapeOps.contiguous(x); }

    /**
     * Identity whose backward runs {@code onBackward} when the gradient reaches this point of the graph: used to
     * time the backward of a block (a marker at its output fires when its backward starts, one at its input when it
     * ends) for the trace. Not recorded when x needs no grad.
     */
    public static Tensor backwardMarker(Tensor x, Runnable onBackward) {
        if (!ShapeOps.recording(x)) return x;
        Tensor out = x.detach();
        out.setGradFn(new Node(x) {
            @Override
            protected Tensor[] apply(Tensor g) {
                onBackward.run();
                return new Tensor[]{g};
            }

            @Override
            boolean readsGradientInBf16() { return nextReadsGradientInBf16(0); }

            @Override
            public String name() { return "BackwardMarker"; }
        });
        return out;
    }
}
