package dev.jtrain.autograd;

import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.VectorOps;

/** Full reductions (sum, mean) to a scalar. */
final class ReduceOps {
    private ReduceOps() {}

    static Tensor sum(Tensor x, float factor, String name) {
        Tensor xc = x.contiguous();
        Tensor out = Tensor.scalar((float) (VectorOps.sum(xc.data(), xc.offset(), xc.numel()) * factor));
        if (ShapeOps.recording(x)) {
            int[] shape = x.shape();
            out.setGradFn(new Node(x) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    return new Tensor[]{Tensor.full(g.item() * factor, shape)};
                }

                @Override
                public String name() { return name; }
            });
        }
        return out;
    }
}
