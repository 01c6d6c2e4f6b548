package dev.jtrain.autograd;

import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16Gemm;
import dev.jtrain.tensor.kernel.Precision;
import dev.jtrain.tensor.kernel.Sgemm;
import dev.jtrain.tensor.kernel.VectorOps;

/**
 * Matrix products on top of {@link Sgemm}, or its bf16 counterpart inside {@link Autocast#bf16()}. Transposed views
 * are passed to the GEMM as transpose flags, never copied. Backward of C = A·B: dA = dC·Bᵀ, dB = Aᵀ·dC, in the
 * precision the forward ran in. Operands are kept for backward in that precision too: a bf16 product rounds them to
 * bf16 whenever it reads them, so inside {@link Autocast#bf16()} they are saved as bf16 at half the memory. A linear
 * layer's dW = dyᵀ·x packs x straight from that copy ({@link Bf16Gemm#gemmPackedB}), never widening it to fp32.
 */
final class MatmulOps {
    private MatmulOps() {}

    /** A row-major matrix (or batch of them) as the GEMM sees it. */
    record Mat(float[] data, int off, int ld, boolean trans, int rows, int cols, int batchStride) {
        /** View the last two dims of t; copies only if neither they nor their transpose are contiguous. */
        static Mat of(Tensor t) {
            int nd = t.dim();
            int[] sh = t.shape(), st = t.strides();
            int r = sh[nd - 2], c = sh[nd - 1];
            int bs = nd == 3 ? st[0] : 0;
            boolean batchOk = nd == 2 || sh[0] == 1 || st[0] >= r * c || st[0] == 0;
            if (batchOk && (st[nd - 1] == 1 || c == 1) && st[nd - 2] >= c) return new Mat(t.data(), t.offset(), Math.max(st[nd - 2], 1), false, r, c, bs);
            if (batchOk && (st[nd - 2] == 1 || r == 1) && st[nd - 1] >= r) return new Mat(t.data(), t.offset(), Math.max(st[nd - 1], 1), true, r, c, bs);
            Tensor cc = t.copyData();
            return new Mat(cc.data(), 0, c, false, r, c, nd == 3 ? r * c : 0);
        }
    }

    /** (M,K)@(K,N), (B,M,K)@(B,K,N), or (...,M,K)@(K,N) by folding the leading dims into M. */
    static Tensor matmul(Tensor a, Tensor b) {
        if (a.dim() > 2 && b.dim() == 2) {
            int[] as = a.shape();
            int k = as[as.length - 1];
            Tensor a2 = a.reshape(-1, k);
            Tensor out = matmul(a2, b);
            int[] os = as.clone();
            os[os.length - 1] = b.size(1);
            return out.reshape(os);
        }
        if (!(a.dim() == 2 && b.dim() == 2) && !(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0)))
            throw new IllegalArgumentException("matmul supports (M,K)@(K,N), (B,M,K)@(B,K,N) and (...,M,K)@(K,N); got "
                    + Shape.str(a.shape()) + " @ " + Shape.str(b.shape()));
        if (a.size(-1) != b.size(-2))
            throw new IllegalArgumentException("matmul inner dimensions differ: " + Shape.str(a.shape()) + " @ " + Shape.str(b.shape()));
        Precision precision = Autocast.precision();
        Tensor out = product(a, b, precision);
        if (ShapeOps.recording(a, b)) {
            var node = new Node(a, b) {
                Saved sa, sb;

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor ga = null, gb = null;
                    if (needsGrad(0)) {
                        Tensor bs = sb.get();
                        ga = product(g, bs.transpose(-2, -1), precision);
                        sb.done(bs);
                    }
                    if (needsGrad(1)) {
                        Tensor as = sa.get();
                        gb = product(as.transpose(-2, -1), g, precision);
                        sa.done(as);
                    }
                    return new Tensor[]{ga, gb};
                }

                @Override
                boolean readsGradientInBf16() { return precision == Precision.BF16; }

                @Override
                public String name() { return "MatmulBackward"; }
            };
            boolean bf16 = precision == Precision.BF16; // the backward products round both operands to bf16 anyway
            node.sa = node.save(a, bf16);
            node.sb = node.save(b, bf16);
            out.setGradFn(node);
        }
        return out;
    }

    private static Tensor product(Tensor a, Tensor b, Precision precision) {
        Mat ma = Mat.of(a.detach()), mb = Mat.of(b.detach());
        int m = ma.rows, k = ma.cols, n = mb.cols;
        if (a.dim() == 2) {
            Tensor out = Tensor.empty(m, n); // beta 0: every element written
            precision.gemm(ma.trans, mb.trans, m, n, k, 1f, ma.data, ma.off, ma.ld, mb.data, mb.off, mb.ld, 0f, out.data(), 0, n);
            return out;
        }
        int batch = a.size(0);
        Tensor out = Tensor.empty(batch, m, n);
        for (int i = 0; i < batch; i++)
            precision.gemm(ma.trans, mb.trans, m, n, k, 1f, ma.data, ma.off + i * ma.batchStride, ma.ld,
                    mb.data, mb.off + i * mb.batchStride, mb.ld, 0f, out.data(), i * m * n, n);
        return out;
    }

    /**
     * y = x·Wᵀ + b for x (..., in), W (out, in), b (out): torch.nn.Linear's layout, so nanoGPT state dicts map 1:1.
     * Backward: dx = dy·W, dW += dyᵀ·x, db += Σ_rows dy, each one GEMM over all rows at once.
     */
    static Tensor linear(Tensor x, Tensor w, Tensor b) {
        int in = w.size(1), outF = w.size(0);
        if (x.size(-1) != in)
            throw new IllegalArgumentException("linear: input features " + x.size(-1) + " != weight in_features " + in
                    + " (x " + Shape.str(x.shape()) + ", W " + Shape.str(w.shape()) + ")");
        Tensor xc = x.contiguous().detach();
        Tensor wc = w.contiguous().detach();
        int rows = xc.numel() / in;
        int[] outShape = x.shape();
        outShape[outShape.length - 1] = outF;
        Tensor out = Tensor.empty(outShape); // the bias row or beta 0 sets every element
        float[] od = out.data();
        Precision precision = Autocast.precision();
        if (b != null) {
            Tensor bc = b.contiguous();
            precision.gemmWithBias(false, true, rows, outF, in, xc.data(), xc.offset(), in, wc.data(), wc.offset(), in,
                    bc.data(), bc.offset(), od, 0, outF);
        } else {
            precision.gemm(false, true, rows, outF, in, 1f, xc.data(), xc.offset(), in, wc.data(), wc.offset(), in,
                    0f, od, 0, outF);
        }
        if (ShapeOps.recording(x, w, b)) {
            var node = new Node(x, w, b) {
                Saved sx;

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous();
                    Tensor gx = null, gw = null, gb = null;
                    if (needsGrad(0)) {
                        Tensor wb = w.contiguous().detach(); // W where it is now: a sharded strategy moves it between gathers
                        gx = Tensor.empty(xc.shape());
                        precision.gemm(false, false, rows, in, outF, 1f, gc.data(), gc.offset(), outF, wb.data(), wb.offset(), in,
                                0f, gx.data(), 0, in);
                    }
                    if (needsGrad(1)) {
                        Tensor into = leafGradient(1); // dW added straight into W's gradient: no outF x in temporary
                        if (into == null) gw = Tensor.empty(outF, in);
                        float[] c = into != null ? into.data() : gw.data();
                        int cOff = into != null ? into.offset() : 0;
                        float beta = into != null ? 1f : 0f;
                        int[] words = sx.bf16Words();
                        if (words != null && Bf16Gemm.takesPackedB(in)) { // packed from x's bf16 copy, never widened
                            Bf16Gemm.gemmPackedB(true, outF, in, rows, 1f, gc.data(), gc.offset(), outF, words, in, beta, c, cOff, in);
                        } else {
                            Tensor xs = sx.get();
                            precision.gemm(true, false, outF, in, rows, 1f, gc.data(), gc.offset(), outF, xs.data(), xs.offset(), in,
                                    beta, c, cOff, in);
                            sx.done(xs);
                        }
                        if (into != null) gw = ACCUMULATED_IN_PLACE;
                    }
                    if (b != null && needsGrad(2)) {
                        gb = Tensor.zeros(outF);
                        VectorOps.sumRows(gc.data(), gc.offset(), rows, outF, gb.data(), 0, false);
                    }
                    return new Tensor[]{gx, gw, gb};
                }

                @Override
                boolean readsGradientInBf16() { return precision == Precision.BF16 && b == null; } // db sums it in fp32

                @Override
                public String name() { return "LinearBackward"; }
            };
            // dW = dyᵀ·x reads x rounded to bf16 in a bf16 product, so a bf16 copy changes nothing
            node.sx = node.save(xc, precision == Precision.BF16);
            out.setGradFn(node);
        }
        return out;
    }
}
