package dev.jtrain.autograd;

import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.Tensor;

/** Views: reshape, transpose, narrow, and the copy that makes a view contiguous. */
final class ShapeOps {
    private ShapeOps() {}

    static boolean recording(Tensor... ts) {
        if (!GradMode.isEnabled()) return false;
        for (Tensor t : ts) if (t != null && t.requiresGrad()) return true;
        return false;
    }

    static Tensor reshape(Tensor x, int... newShape) {
        int[] target = Shape.inferReshape(x.numel(), newShape);
        Tensor src = x.isContiguous() ? x : contiguous(x);
        Tensor out = src.viewAs(target, Shape.contiguousStrides(target), src.offset());
        if (recording(src)) {
            int[] inShape = src.shape();
            out.setGradFn(new Node(src) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    return new Tensor[]{g.contiguous().detach().viewAs(inShape, Shape.contiguousStrides(inShape), g.contiguous().offset())};
                }

                @Override
                boolean readsGradientInBf16() { return nextReadsGradientInBf16(0); }

                @Override
                public String name() { return "ReshapeBackward"; }
            });
        }
        return out;
    }

    static Tensor transpose(Tensor x, int d0, int d1) {
        int nd = x.dim();
        d0 = d0 < 0 ? d0 + nd : d0;
        d1 = d1 < 0 ? d1 + nd : d1;
        int[] shape = x.shape(), strides = x.strides();
        int t = shape[d0]; shape[d0] = shape[d1]; shape[d1] = t;
        t = strides[d0]; strides[d0] = strides[d1]; strides[d1] = t;
        Tensor out = x.viewAs(shape, strides, x.offset());
        if (recording(x)) {
            final int a = d0, b = d1;
            out.setGradFn(new Node(x) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    return new Tensor[]{transpose(g, a, b).contiguous()};
                }

                @Override
                public String name() { return "TransposeBackward"; }
            });
        }
        return out;
    }

    static Tensor narrow(Tensor x, int dim, int start, int length) {
        int nd = x.dim();
        int d = dim < 0 ? dim + nd : dim;
        int[] shape = x.shape(), strides = x.strides();
        if (start < 0 || length < 0 || start + length > shape[d])
            throw new IllegalArgumentException("narrow(dim=" + d + ", start=" + start + ", length=" + length + ") out of shape " + Shape.str(shape));
        int off = x.offset() + start * strides[d];
        shape[d] = length;
        Tensor out = x.viewAs(shape, strides, off);
        if (recording(x)) {
            int[] inShape = x.shape();
            out.setGradFn(new Node(x) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor full = Tensor.zeros(inShape);
                    Tensor slot = full.viewAs(g.shape(), full.strides(), start * full.strides()[d]);
                    copyInto(g, slot);
                    return new Tensor[]{full};
                }

                @Override
                public String name() { return "NarrowBackward"; }
            });
        }
        return out;
    }

    static Tensor contiguous(Tensor x) {
        Tensor out = x.copyData();
        if (recording(x)) {
            out.setGradFn(new Node(x) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    return new Tensor[]{g.contiguous()};
                }

                @Override
                boolean readsGradientInBf16() { return nextReadsGradientInBf16(0); }

                @Override
                public String name() { return "ContiguousBackward"; }
            });
        }
        return out;
    }

    /** Copies src's values into the (possibly strided) view dst of the same shape. */
    static void copyInto(Tensor src, Tensor dst) {
        float[] vals = src.toArray();
        int[] shape = dst.shape(), strides = dst.strides();
        int nd = shape.length;
        int[] idx = new int[nd];
        int p = dst.offset();
        float[] d = dst.data();
        for (int i = 0; i < vals.length; i++) {
            d[p] = vals[i];
            for (int k = nd - 1; k >= 0; k--) {
                idx[k]++;
                p += strides[k];
                if (idx[k] < shape[k]) break;
                p -= strides[k] * shape[k];
                idx[k] = 0;
            }
        }
    }
}
