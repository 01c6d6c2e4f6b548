package dev.jtrain.autograd;

import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;
import dev.jtrain.tensor.kernel.CrossEntropyKernel;
import dev.jtrain.tensor.kernel.VectorOps;

/**
 * Mean softmax cross-entropy of logits (N, V) against integer targets; targets &lt; 0 are ignored. The loss, the
 * softmax and the log-sum-exp are fp32.
 *
 * <p>For backward it keeps the logits, or, when whatever produced them reads its gradient only through bf16 (the
 * lm_head's bf16 product under {@link Autocast}), the gradient itself: dz = (softmax(z) - onehot) / n is computed
 * in the forward, chunk by chunk, and kept as bf16, then scaled by the incoming gradient in backward. The logits
 * (N·V, the largest activation of a language model) can then go as soon as the loss is known, and the kept state
 * is half their size. With an incoming gradient of 1, the usual one, the product receives exactly the bf16 values
 * it would have rounded dz to.
 */
final class CrossEntropyOps {
    private CrossEntropyOps() {}

    static Tensor crossEntropy(Tensor logits, int[] targets, int validClasses) {
        int cols = logits.size(-1);
        Tensor zc = logits.contiguous().detach();
        int rows = zc.numel() / cols;
        if (targets.length != rows)
            throw new IllegalArgumentException("crossEntropy: " + targets.length + " targets for " + rows + " rows of logits");
        if (validClasses < 1 || validClasses > cols)
            throw new IllegalArgumentException("crossEntropy: validClasses=" + validClasses + " must be in [1, " + cols + "]");
        float[] lse = new float[rows], loss = new float[rows];
        CrossEntropyKernel.forward(zc.data(), zc.offset(), targets, rows, cols, validClasses, lse, loss);
        int counted = 0;
        double total = 0;
        for (int r = 0; r < rows; r++) {
            if (targets[r] >= 0) {
                counted++;
                total += loss[r];
            }
        }
        final int n = Math.max(counted, 1);
        Tensor out = Tensor.scalar((float) (total / n));
        if (ShapeOps.recording(logits)) {
            int[] t = targets.clone();
            int[] shape = zc.shape();
            var node = new Node(logits) {
                Saved sz;
                int[] dzBf16;

                @Override
                protected Tensor[] apply(Tensor g) {
                    if (dzBf16 != null) {
                        float[] dz = StepArena.uninitializedFloats(rows * cols);
                        Bf16.unpack(dzBf16, rows * cols, dz, 0);
                        float s = g.item();
                        if (s != 1f) VectorOps.scale(s, dz, 0, dz, 0, dz.length);
                        return new Tensor[]{Tensor.view(dz, 0, shape)};
                    }
                    Tensor zs = sz.get();
                    Tensor dz = Tensor.empty(shape); // every row set, padding and ignored rows to 0
                    CrossEntropyKernel.backward(zs.data(), zs.offset(), t, lse, g.item() / n, rows, cols, validClasses, dz.data(), 0);
                    return new Tensor[]{dz};
                }

                @Override
                protected void release() {
                    if (dzBf16 != null) StepArena.release(dzBf16);
                    dzBf16 = null;
                }

                @Override
                public String name() { return "CrossEntropyBackward"; }
            };
            if (node.nextReadsGradientInBf16(0)) {
                node.dzBf16 = gradientInBf16(zc, t, lse, 1f / n, rows, cols, validClasses);
                node.saved(node.dzBf16.length); // words: two bf16 values per 4 bytes
            } else {
                node.sz = node.save(zc, false);
            }
            out.setGradFn(node);
        }
        return out;
    }

    /** dz·scale packed to bf16, computed a few rows at a time so that no fp32 copy of the whole of it exists. */
    private static int[] gradientInBf16(Tensor z, int[] targets, float[] lse, float scale, int rows, int cols, int valid) {
        int[] words = StepArena.ints(Bf16.packedWords(rows * cols));
        int chunk = Bf16.packBlock(); // rows per piece: each piece is then a whole number of packing blocks
        float[] buf = StepArena.uninitializedFloats(Math.min(chunk, rows) * cols);
        for (int r0 = 0; r0 < rows; r0 += chunk) {
            int r1 = Math.min(rows, r0 + chunk);
            CrossEntropyKernel.backwardRows(z.data(), z.offset(), targets, lse, scale, r0, r1, cols, valid, buf, 0);
            Bf16.pack(buf, 0, (r1 - r0) * cols, words, r0 * cols / 2);
        }
        StepArena.release(buf);
        return words;
    }
}
