package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;
import dev.jtrain.tensor.kernel.SoftmaxKernel;

/**
 * Causal multi-head self-attention fused over the packed projection qkv (B, T, 3C) → y (B, T, C), reading q, k, v
 * of head h in place with leading dimension 3C (no split/transpose copies, as in llm.c's attention_forward).
 * Per (b, h): S = q·kᵀ, P = softmax(S/√hs) over the causal prefix, y_h = dropout(P)·v.
 * Backward: dP = dy_h·vᵀ, dv = dropout(P)ᵀ·dy_h, dS = P ⊙ (dP - rowsum(P ⊙ dP))/√hs, dq = dS·k, dk = dSᵀ·q.
 * Parallel over the B·H independent heads; the per-head GEMMs run inside one worker.
 *
 * <p>P (B·H·T² floats, more than all of a block's other activations at T ≥ 4C/H) is never stored: backward
 * recomputes it per head from q and k, as FlashAttention does (Dao et al. 2022), at the cost of one more T×T×hs
 * product and softmax per head. The recompute runs the same GEMM and softmax on the same inputs, so P is bitwise
 * the forward's. Only qkv is saved, and the dropout mask when there is one.
 * Inside {@link Autocast#bf16()} the four products run in bf16 with fp32 accumulation (forward and backward), and
 * qkv is kept in bf16, as the products read it in bf16 anyway; the softmax and its backward stay fp32, as
 * autocast has it.
 */
final class AttentionOps {
    private AttentionOps() {}

    static Tensor causalSelfAttention(Tensor qkv, int nHead, float dropout, Rng rng) {
        if (qkv.dim() != 3 || qkv.size(2) % 3 != 0)
            throw new IllegalArgumentException("attention expects qkv (B, T, 3C), got " + Shape.str(qkv.shape()));
        Tensor x = qkv.contiguous().detach();
        int B = x.size(0), T = x.size(1), C3 = x.size(2), C = C3 / 3;
        if (C % nHead != 0) throw new IllegalArgumentException("C=" + C + " not divisible by nHead=" + nHead);
        int hs = C / nHead;
        float scale = (float) (1.0 / Math.sqrt(hs));
        float[] mask = dropout > 0f ? StepArena.floats(B * nHead * T * T) : null;
        if (mask != null) {
            float keep = 1f / (1f - dropout);
            for (int i = 0; i < mask.length; i++) mask[i] = rng.nextFloat() >= dropout ? keep : 0f;
        }
        Tensor y = Tensor.empty(B, T, C); // every head writes its T x hs block with beta 0
        float[] yd = y.data();
        Precision precision = Autocast.precision(); // the workers run the products in the caller's precision
        Parallel.forRange(B * nHead, 1, (lo, hi) -> {
            float[] p = new float[T * T];
            float[] dropped = mask != null ? new float[T * T] : null;
            for (int bh = lo; bh < hi; bh++) {
                int b = bh / nHead, h = bh % nHead;
                int q = x.offset() + b * T * C3 + h * hs;
                probabilities(precision, x.data(), q, C, C3, T, hs, scale, p);
                float[] pd = dropped(p, mask, bh * T * T, dropped);
                precision.gemm(false, false, T, hs, T, 1f, pd, 0, T, x.data(), q + 2 * C, C3, 0f, yd, b * T * C + h * hs, C);
            }
        });
        if (ShapeOps.recording(qkv)) {
            var node = new Node(qkv) {
                Saved saved;

                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous();
                    float[] gd = gc.data();
                    int go = gc.offset();
                    Tensor xs = saved.get();
                    float[] qd = xs.data();
                    int xo = xs.offset();
                    Tensor dqkv = Tensor.empty(B, T, C3); // dq, dk, dv of every head written with beta 0
                    float[] dd = dqkv.data();
                    Parallel.forRange(B * nHead, 1, (lo, hi) -> {
                        float[] p = new float[T * T], dp = new float[T * T];
                        float[] dropped = mask != null ? new float[T * T] : null;
                        for (int bh = lo; bh < hi; bh++) {
                            int b = bh / nHead, h = bh % nHead;
                            int q = xo + b * T * C3 + h * hs, k = q + C, v = q + 2 * C;
                            int dq = b * T * C3 + h * hs, dk = dq + C, dv = dq + 2 * C;
                            int dy = go + b * T * C + h * hs;
                            int a = bh * T * T;
                            probabilities(precision, qd, q, C, C3, T, hs, scale, p);
                            float[] pd = dropped(p, mask, a, dropped);
                            precision.gemm(false, true, T, T, hs, 1f, gd, dy, C, qd, v, C3, 0f, dp, 0, T);
                            precision.gemm(true, false, T, hs, T, 1f, pd, 0, T, gd, dy, C, 0f, dd, dv, C3);
                            if (mask != null) for (int i = 0; i < T * T; i++) dp[i] *= mask[a + i];
                            for (int t = 0; t < T; t++)
                                SoftmaxKernel.softmaxPrefixBackward(p, t * T, dp, t * T, dp, t * T, t + 1, T, scale);
                            precision.gemm(false, false, T, hs, T, 1f, dp, 0, T, qd, k, C3, 0f, dd, dq, C3);
                            precision.gemm(true, false, T, hs, T, 1f, dp, 0, T, qd, q, C3, 0f, dd, dk, C3);
                        }
                    });
                    saved.done(xs);
                    return new Tensor[]{dqkv};
                }

                @Override
                protected void release() {
                    if (mask != null) StepArena.release(mask);
                }

                @Override
                public String name() { return "CausalSelfAttentionBackward"; }
            };
            node.saved = node.save(x, precision == Precision.BF16);
            if (mask != null) node.saved(mask.length);
            y.setGradFn(node);
        } else if (mask != null) {
            StepArena.release(mask);
        }
        return y;
    }

    /** P of one head into p (T × T): S = q·kᵀ in {@code precision}, then the causal softmax of S/√hs row by row. */
    private static void probabilities(Precision precision, float[] qkv, int q, int c, int c3, int t, int hs, float scale,
                                      float[] p) {
        precision.gemm(false, true, t, t, hs, 1f, qkv, q, c3, qkv, q + c, c3, 0f, p, 0, t);
        for (int r = 0; r < t; r++) SoftmaxKernel.softmaxPrefix(p, r * t, r + 1, t, scale);
    }

    /** P with the dropout mask (from mask[a]) applied into {@code scratch}, or P itself without dropout. */
    private static float[] dropped(float[] p, float[] mask, int a, float[] scratch) {
        if (mask == null) return p;
        for (int i = 0; i < p.length; i++) scratch[i] = p[i] * mask[a + i];
        return scratch;
    }
}
