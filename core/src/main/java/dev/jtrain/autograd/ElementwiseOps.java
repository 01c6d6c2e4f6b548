package dev.jtrain.autograd;

import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.VectorOps;

import java.util.Arrays;

/** Broadcasting binary ops (NumPy rules) and unary maps, with their backward. */
final class ElementwiseOps {
    enum Op { ADD, SUB, MUL, DIV }

    private ElementwiseOps() {}

    static Tensor binary(Op op, Tensor a, Tensor b) {
        int[] outShape = Shape.broadcast(a.shape(), b.shape());
        int[] aShape = a.shape(), bShape = b.shape();
        Tensor out = compute(op, a, b, outShape);
        if (ShapeOps.recording(a, b)) {
            var node = new Node(a, b) {
                Saved sa, sb; // kept only by MUL and DIV, whose gradients read the operands

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor a = sa == null ? null : sa.get(), b = sb == null ? null : sb.get();
                    Tensor ga = null, gb = null;
                    switch (op) {
                        case ADD -> {
                            if (needsGrad(0)) ga = sumToShape(g, aShape);
                            if (needsGrad(1)) gb = sumToShape(g, bShape);
                        }
                        case SUB -> {
                            if (needsGrad(0)) ga = sumToShape(g, aShape);
                            if (needsGrad(1)) gb = sumToShape(compute(Op.MUL, g, Tensor.scalar(-1f), g.shape()), bShape);
                        }
                        case MUL -> {
                            if (needsGrad(0)) ga = sumToShape(compute(Op.MUL, g, b, g.shape()), a.shape());
                            if (needsGrad(1)) gb = sumToShape(compute(Op.MUL, g, a, g.shape()), b.shape());
                        }
                        case DIV -> {
                            if (needsGrad(0)) ga = sumToShape(compute(Op.DIV, g, b, g.shape()), a.shape());
                            if (needsGrad(1)) {
                                // d(a/b)/db = -a/b²
                                Tensor t = compute(Op.DIV, compute(Op.MUL, g, a, g.shape()), compute(Op.MUL, b, b, b.shape()), g.shape());
                                gb = sumToShape(compute(Op.MUL, t, Tensor.scalar(-1f), t.shape()), b.shape());
                            }
                        }
                    }
                    return new Tensor[]{ga, gb};
                }

                @Override
                public String name() { return op.name().charAt(0) + op.name().substring(1).toLowerCase() + "Backward"; }
            };
            if (op == Op.MUL || op == Op.DIV) {
                node.sa = node.save(a, false);
                node.sb = node.save(b, false);
            }
            out.setGradFn(node);
        }
        return out;
    }

    static Tensor compute(Op op, Tensor a, Tensor b, int[] outShape) {
        Tensor out = Tensor.zeros(outShape);
        int n = out.numel();
        float[] o = out.data();
        if (a.isContiguous() && b.isContiguous() && Arrays.equals(a.shape(), outShape) && Arrays.equals(b.shape(), outShape)) {
            switch (op) {
                case ADD -> { VectorOps.add(a.data(), a.offset(), b.data(), b.offset(), o, 0, n); return out; }
                case MUL -> { VectorOps.mul(a.data(), a.offset(), b.data(), b.offset(), o, 0, n); return out; }
                default -> { }
            }
        }
        if (op == Op.ADD && a.isContiguous() && b.isContiguous() && Arrays.equals(a.shape(), outShape) && isSuffix(b.shape(), outShape) && b.numel() > 0) {
            int cols = b.numel();
            VectorOps.addRow(a.data(), a.offset(), b.data(), b.offset(), o, 0, n / cols, cols);
            return out;
        }
        int nd = outShape.length;
        int[] sa = Shape.broadcastStrides(a.shape(), a.strides(), outShape);
        int[] sb = Shape.broadcastStrides(b.shape(), b.strides(), outShape);
        int[] idx = new int[nd];
        int pa = a.offset(), pb = b.offset();
        float[] da = a.data(), db = b.data();
        for (int i = 0; i < n; i++) {
            float x = da[pa], y = db[pb];
            o[i] = switch (op) {
                case ADD -> x + y;
                case SUB -> x - y;
                case MUL -> x * y;
                case DIV -> x / y;
            };
            for (int d = nd - 1; d >= 0; d--) {
                idx[d]++;
                pa += sa[d];
                pb += sb[d];
                if (idx[d] < outShape[d]) break;
                pa -= sa[d] * outShape[d];
                pb -= sb[d] * outShape[d];
                idx[d] = 0;
            }
        }
        return out;
    }

    private static boolean isSuffix(int[] small, int[] big) {
        int off = big.length - small.length;
        if (off < 0) return false;
        for (int i = 0; i < small.length; i++) if (small[i] != big[off + i]) return false;
        return true;
    }

    /** Sums a broadcast gradient back down to {@code shape} (the adjoint of broadcasting). */
    static Tensor sumToShape(Tensor g, int[] shape) {
        if (Arrays.equals(g.shape(), shape)) return g.contiguous();
        int[] gShape = g.shape();
        Tensor out = Tensor.zeros(shape);
        if (g.isContiguous() && isSuffix(shape, gShape) && out.numel() > 0) {
            int cols = out.numel();
            VectorOps.sumRows(g.data(), g.offset(), g.numel() / cols, cols, out.data(), 0, false);
            return out;
        }
        int nd = gShape.length;
        int[] so = Shape.broadcastStrides(shape, out.strides(), gShape);
        Tensor gc = g.contiguous();
        float[] gd = gc.data(), od = out.data();
        int[] idx = new int[nd];
        int po = 0, n = gc.numel();
        for (int i = 0; i < n; i++) {
            od[po] += gd[gc.offset() + i];
            for (int d = nd - 1; d >= 0; d--) {
                idx[d]++;
                po += so[d];
                if (idx[d] < gShape[d]) break;
                po -= so[d] * gShape[d];
                idx[d] = 0;
            }
        }
        return out;
    }

    static Tensor scale(Tensor x, float s) {
        Tensor xc = x.contiguous();
        Tensor out = Tensor.zeros(x.shape());
        VectorOps.scale(s, xc.data(), xc.offset(), out.data(), 0, out.numel());
        if (ShapeOps.recording(x)) {
            out.setGradFn(new Node(x) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    return new Tensor[]{scale(g, s)};
                }

                @Override
                public String name() { return "ScaleBackward"; }
            });
        }
        return out;
    }

    /** Unary map with derivative expressed from input x and output y. */
    interface Unary {
        float f(float x);

        float df(float x, float y);
    }

    static Tensor map(Tensor x, Unary fn, String name) {
        Tensor xc = x.contiguous();
        Tensor out = Tensor.zeros(x.shape());
        float[] xd = xc.data(), od = out.data();
        int xo = xc.offset(), n = out.numel();
        for (int i = 0; i < n; i++) od[i] = fn.f(xd[xo + i]);
        if (ShapeOps.recording(x)) {
            var node = new Node(x) {
                Saved sx, sy;

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous(), xs = sx.get();
                    Tensor dx = Tensor.zeros(xc.shape());
                    float[] gd = gc.data(), dd = dx.data(), xv = xs.data(), yv = sy.get().data();
                    for (int i = 0; i < n; i++) dd[i] = gd[gc.offset() + i] * fn.df(xv[xs.offset() + i], yv[i]);
                    return new Tensor[]{dx};
                }

                @Override
                public String name() { return name + "Backward"; }
            };
            node.sx = node.save(xc, false);
            node.sy = node.save(out, false);
            out.setGradFn(node);
        }
        return out;
    }
}
