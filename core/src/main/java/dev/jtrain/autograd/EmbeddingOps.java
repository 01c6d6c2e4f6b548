package dev.jtrain.autograd;

import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Parallel;

/** Row gather from an embedding table; backward scatter-adds into the table's gradient. */
final class EmbeddingOps {
    private EmbeddingOps() {}

    static Tensor embedding(Tensor weight, int[] ids, int... idShape) {
        if (Shape.numel(idShape) != ids.length)
            throw new IllegalArgumentException("embedding: ids length " + ids.length + " != numel of " + Shape.str(idShape));
        int vocab = weight.size(0), dim = weight.size(1);
        Tensor wc = weight.contiguous().detach();
        int[] outShape = new int[idShape.length + 1];
        System.arraycopy(idShape, 0, outShape, 0, idShape.length);
        outShape[idShape.length] = dim;
        Tensor out = Tensor.zeros(outShape);
        float[] od = out.data(), wd = wc.data();
        for (int i = 0; i < ids.length; i++) {
            int id = ids[i];
            if (id < 0 || id >= vocab)
                throw new IllegalArgumentException("embedding: token id " + id + " at position " + i + " outside [0, " + vocab + ")");
            System.arraycopy(wd, wc.offset() + id * dim, od, i * dim, dim);
        }
        if (ShapeOps.recording(weight)) {
            int[] saved = ids.clone();
            out.setGradFn(new Node(weight) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous();
                    // Rows are added straight into the table's own gradient when it has one: a dense vocab x width
                    // temporary (hundreds of MiB for GPT-2's vocabulary) would only be added in and dropped.
                    Tensor into = leafGradient(0);
                    Tensor gw = into != null ? into : Tensor.zeros(vocab, dim);
                    float[] gwd = gw.data(), gd = gc.data();
                    int go = gc.offset(), wo = gw.offset();
                    // Parallel over column blocks: repeated ids never race on the same element.
                    Parallel.forRange(dim, 16, (c0, c1) -> {
                        for (int i = 0; i < saved.length; i++) {
                            int row = wo + saved[i] * dim, src = go + i * dim;
                            for (int c = c0; c < c1; c++) gwd[row + c] += gd[src + c];
                        }
                    });
                    return new Tensor[]{into != null ? ACCUMULATED_IN_PLACE : gw};
                }

                @Override
                public String name() { return "EmbeddingBackward"; }
            });
        }
        return out;
    }
}
