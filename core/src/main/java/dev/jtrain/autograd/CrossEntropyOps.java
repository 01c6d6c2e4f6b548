package dev.jtrain.autograd;

import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.CrossEntropyKernel;

/** Mean softmax cross-entropy of logits (N, V) against integer targets; targets &lt; 0 are ignored. */
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
            Node node = new Node(logits) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor dz = Tensor.zeros(zc.shape());
                    CrossEntropyKernel.backward(zc.data(), zc.offset(), t, lse, g.item() / n, rows, cols, validClasses, dz.data(), 0);
                    return new Tensor[]{dz};
                }

                @Override
                public String name() { return "CrossEntropyBackward"; }
            };
            node.saved(zc.numel());
            out.setGradFn(node);
        }
        return out;
    }
}
