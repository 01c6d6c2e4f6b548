package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;
import dev.jtrain.tensor.kernel.GeluKernel;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;
import dev.jtrain.tensor.kernel.SoftmaxKernel;

/** GELU, softmax over the last dimension, dropout. */
final class ActivationOps {
    private ActivationOps() {}

    /**
     * GELU keeps its derivative for backward, computed by the forward from the tanh it needs anyway (see {@link
     * GeluKernel}), rather than its input: the same bytes, and backward is one multiply.
     */
    static Tensor gelu(Tensor x) {
        Tensor xc = x.contiguous().detach();
        Tensor out = Tensor.empty(x.shape());
        int n = out.numel();
        if (!ShapeOps.recording(x)) {
            GeluKernel.forward(xc.data(), xc.offset(), out.data(), 0, n);
            return out;
        }
        // Under autocast GELU's input is a bf16 linear's output, which autocast keeps in bf16 for backward: the
        // derivative is kept in bf16 as well, packed piece by piece by the forward and widened so by the backward.
        Saved kept;
        if (Autocast.precision() == Precision.BF16) {
            int[] words = StepArena.ints(Bf16.packedWords(n));
            GeluKernel.forward(xc.data(), xc.offset(), out.data(), 0, n, words);
            kept = Saved.ofBf16Words(xc.shape(), words);
        } else {
            float[] grad = StepArena.uninitializedFloats(n);
            GeluKernel.forward(xc.data(), xc.offset(), out.data(), 0, n, grad, 0);
            kept = Saved.of(Tensor.view(grad, 0, xc.shape()), false);
            StepArena.release(grad); // the saved copy is its one holder now
        }
        var node = new Node(x) {
            Saved sg;

            @Override
            protected Tensor[] apply(Tensor g) {
                Tensor gc = g.contiguous();
                Tensor dx = Tensor.empty(xc.shape());
                int[] words = sg.bf16Words();
                if (words != null) {
                    GeluKernel.backward(gc.data(), gc.offset(), words, dx.data(), 0, n);
                } else {
                    Tensor d = sg.get();
                    GeluKernel.backward(gc.data(), gc.offset(), d.data(), d.offset(), dx.data(), 0, n);
                    sg.done(d);
                }
                return new Tensor[]{dx};
            }

            @Override
            public String name() { return "GeluBackward"; }
        };
        node.sg = node.keep(kept);
        out.setGradFn(node);
        return out;
    }

    static Tensor softmax(Tensor x) {
        Tensor out = x.copyData();
        int cols = x.size(-1), rows = out.numel() / Math.max(cols, 1);
        float[] od = out.data();
        Parallel.forRange(rows, 64, (lo, hi) -> {
            for (int r = lo; r < hi; r++) SoftmaxKernel.softmaxPrefix(od, r * cols, cols, cols, 1f);
        });
        if (ShapeOps.recording(x)) {
            var node = new Node(x) {
                Saved sy;

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous().copyData();
                    float[] gd = gc.data(), yd = sy.get().data();
                    Parallel.forRange(rows, 64, (lo, hi) -> {
                        for (int r = lo; r < hi; r++)
                            SoftmaxKernel.softmaxPrefixBackward(yd, r * cols, gd, r * cols, gd, r * cols, cols, cols, 1f);
                    });
                    return new Tensor[]{gc};
                }

                @Override
                public String name() { return "SoftmaxBackward"; }
            };
            node.sy = node.save(out, false);
            out.setGradFn(node);
        }
        return out;
    }

    /**
     * Inverted dropout: zero with probability p, scale survivors by 1/(1-p). The mask comes from {@code rng}, so
     * restoring the generator's state replays the same mask (activation checkpointing relies on this).
     */
    static Tensor dropout(Tensor x, float p, Rng rng) {
        if (p == 0f) return x;
        if (p < 0f || p >= 1f) throw new IllegalArgumentException("dropout p must be in [0,1): " + p);
        Tensor xc = x.contiguous().detach();
        int n = xc.numel();
        float[] mask = StepArena.floats(n);
        float keep = 1f / (1f - p);
        for (int i = 0; i < n; i++) mask[i] = rng.nextFloat() >= p ? keep : 0f;
        Tensor out = Tensor.zeros(x.shape());
        float[] od = out.data(), xd = xc.data();
        int xo = xc.offset();
        for (int i = 0; i < n; i++) od[i] = xd[xo + i] * mask[i];
        if (ShapeOps.recording(x)) {
            Node node = new Node(x) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous();
                    Tensor dx = Tensor.zeros(xc.shape());
                    float[] gd = gc.data(), dd = dx.data();
                    for (int i = 0; i < n; i++) dd[i] = gd[gc.offset() + i] * mask[i];
                    return new Tensor[]{dx};
                }

                @Override
                protected void release() {
                    StepArena.release(mask);
                }

                @Override
                public String name() { return "DropoutBackward"; }
            };
            node.saved(n);
            out.setGradFn(node);
        } else {
            StepArena.release(mask);
        }
        return out;
    }
}
