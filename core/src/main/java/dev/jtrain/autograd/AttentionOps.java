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
 * Saves P (B, H, T, T): the activation memory that checkpointing trades for recompute.
 * Inside {@link Autocast#bf16()} the four products run in bf16 with fp32 accumulation (forward and backward); the
 * softmax and its backward stay fp32, as autocast has it.
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
        float[] qd = x.data();
        int xo = x.offset();
        float[] att = StepArena.floats(B * nHead * T * T);
        float[] mask = dropout > 0f ? StepArena.floats(att.length) : null;
        if (mask != null) {
            float keep = 1f / (1f - dropout);
            for (int i = 0; i < mask.length; i++) mask[i] = rng.nextFloat() >= dropout ? keep : 0f;
        }
        Tensor y = Tensor.zeros(B, T, C);
        float[] yd = y.data();
        Precision precision = Autocast.precision(); // the workers run the products in the caller's precision
        Parallel.forRange(B * nHead, 1, (lo, hi) -> {
            float[] dropped = mask != null ? new float[T * T] : null;
            for (int bh = lo; bh < hi; bh++) {
                int b = bh / nHead, h = bh % nHead;
                int q = xo + b * T * C3 + h * hs, k = q + C, v = q + 2 * C;
                int a = bh * T * T;
                precision.gemm(false, true, T, T, hs, 1f, qd, q, C3, qd, k, C3, 0f, att, a, T);
                for (int t = 0; t < T; t++) SoftmaxKernel.softmaxPrefix(att, a + t * T, t + 1, T, scale);
                float[] p = dropped(att, a, mask, dropped, T * T);
                precision.gemm(false, false, T, hs, T, 1f, p, p == att ? a : 0, T, qd, v, C3, 0f, yd, b * T * C + h * hs, C);
            }
        });
        if (ShapeOps.recording(qkv)) {
            Node node = new Node(qkv) {
                @Override
                protected Tensor[] apply(Tensor g) {
                    Tensor gc = g.contiguous();
                    float[] gd = gc.data();
                    int go = gc.offset();
                    Tensor dqkv = Tensor.zeros(B, T, C3);
                    float[] dd = dqkv.data();
                    Parallel.forRange(B * nHead, 1, (lo, hi) -> {
                        float[] dp = new float[T * T];
                        float[] dropped = mask != null ? new float[T * T] : null;
                        for (int bh = lo; bh < hi; bh++) {
                            int b = bh / nHead, h = bh % nHead;
                            int q = xo + b * T * C3 + h * hs, k = q + C, v = q + 2 * C;
                            int dq = b * T * C3 + h * hs, dk = dq + C, dv = dq + 2 * C;
                            int dy = go + b * T * C + h * hs;
                            int a = bh * T * T;
                            float[] p = dropped(att, a, mask, dropped, T * T);
                            int po = p == att ? a : 0;
                            precision.gemm(false, true, T, T, hs, 1f, gd, dy, C, qd, v, C3, 0f, dp, 0, T);
                            precision.gemm(true, false, T, hs, T, 1f, p, po, T, gd, dy, C, 0f, dd, dv, C3);
                            if (mask != null) for (int i = 0; i < T * T; i++) dp[i] *= mask[a + i];
                            for (int t = 0; t < T; t++)
                                SoftmaxKernel.softmaxPrefixBackward(att, a + t * T, dp, t * T, dp, t * T, t + 1, T, scale);
                            precision.gemm(false, false, T, hs, T, 1f, dp, 0, T, qd, k, C3, 0f, dd, dq, C3);
                            precision.gemm(true, false, T, hs, T, 1f, dp, 0, T, qd, q, C3, 0f, dd, dk, C3);
                        }
                    });
                    return new Tensor[]{dqkv};
                }

                @Override
                public String name() { return "CausalSelfAttentionBackward"; }
            };
            node.saved(x.numel() + (long) att.length + (mask != null ? mask.length : 0));
            y.setGradFn(node);
        }
        return y;
    }

    /** P with the dropout mask applied (into {@code scratch}), or P itself without dropout; P starts at att[a]. */
    private static float[] dropped(float[] att, int a, float[] mask, float[] scratch, int n) {
        if (mask == null) return att;
        for (int i = 0; i < n; i++) scratch[i] = att[a + i] * mask[a + i];
        return scratch;
    }
}
