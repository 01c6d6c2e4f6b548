package dev.jtrain.autograd;

import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.LayerNormKernel;

/** LayerNorm over the last dimension with the fused kernel; saves input, mean and rstd for backward. */
final class NormOps {
    private NormOps() {}

    static Tensor layerNorm(Tensor x, Tensor w, Tensor b, float eps) {
        int cols = x.size(-1);
        if (w.numel() != cols || (b != null && b.numel() != cols))
            throw new IllegalArgumentException("layerNorm: weight/bias size must equal last dim " + cols);
        Tensor xc = x.contiguous().detach();
        Tensor wc = w.contiguous().detach();
        Tensor bc = b == null ? null : b.contiguous().detach();
        int rows = xc.numel() / cols;
        float[] mean = new float[rows], rstd = new float[rows];
        Tensor out = Tensor.empty(x.shape());
        LayerNormKernel.forward(xc.data(), xc.offset(), wc.data(), bc == null ? null : bc.data(), wc.offset(),
                bc == null ? 0 : bc.offset(), out.data(), 0, mean, rstd, rows, cols, eps);
        if (ShapeOps.recording(x, w, b)) {
            var node = new Node(x, w, b) {
                Saved sx;

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor xs = sx.get();
                    Tensor gc = g.contiguous();
                    Tensor dx = Tensor.empty(xc.shape());
                    Tensor dw = Tensor.zeros(cols);
                    Tensor db = Tensor.zeros(cols);
                    Tensor wb = w.contiguous().detach(); // the gain where it is now (sharded strategies move it)
                    LayerNormKernel.backward(gc.data(), gc.offset(), xs.data(), xs.offset(), wb.data(), wb.offset(), mean, rstd,
                            dx.data(), 0, dw.data(), 0, db.data(), 0, rows, cols);
                    return new Tensor[]{needsGrad(0) ? dx : null, needsGrad(1) ? dw.reshape(w.shape()) : null,
                            b != null && needsGrad(2) ? db.reshape(b.shape()) : null};
                }

                @Override
                public String name() { return "LayerNormBackward"; }
            };
            node.sx = node.save(xc, false); // the statistics' input stays fp32, as autocast keeps layer_norm in fp32
            node.saved(2L * rows);
            out.setGradFn(node);
        }
        return out;
    }
}
