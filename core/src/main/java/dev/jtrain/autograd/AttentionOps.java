package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Bf16;
import dev.jtrain.tensor.kernel.Bf16PackedB;
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
 * the forward's. Only qkv is saved, and the dropout mask when there is one; a bf16 copy of it is widened back one
 * sequence at a time by the worker that reads it.
 * Inside {@link Autocast#bf16()} the four products run in bf16 with fp32 accumulation (forward and backward), and
 * qkv is kept in bf16, as the products read it in bf16 anyway; the softmax and its backward stay fp32, as
 * autocast has it.
 *
 * <p>The products skip the causal triangle's zeros, as FlashAttention's tiling does: rows go in blocks of
 * {@link #BLOCK}, and a row block [r0, r1) multiplies only against keys and values [0, r1) (S, P·v, dP, dS·k); dv
 * and dk go by column block [c0, c1), over rows [c0, T) only. At T = 256 that is 62.5% of the full products' work,
 * in calls still large enough (64 rows or columns) for the GEMM's tiles. Every entry a product reads is written
 * first: softmax and its backward fill a row's zeros up to its block's end. In bf16 on the native kernel, each
 * 12-row panel of a row block also stops at its own last row ({@link Bf16PackedB#multiplyCausal}): S and dP at
 * the 32-column panel holding it, P·v and dS·k at its k, which the diagonal tile's rectangle ran to the block's end. In bf16 on the native kernel, each head's
 * right-hand operands (kᵀ and v forward; vᵀ, k, dy and q backward) are rounded and packed once ({@link Bf16PackedB})
 * and every block reads its range of them, where a GEMM per block would pack its prefix again each time; the
 * products are bitwise the same.
 */
final class AttentionOps {
    /** Rows (and columns) per block of the causal triangle: whole 32-column B panels of either GEMM at every block edge. */
    static final int BLOCK = 64;
    /** One worker's packed head operands (bf16 on the native kernel): forward kᵀ, v; backward also k, dy, q. */
    private static final ThreadLocal<float[][]> WIDENED = ThreadLocal.withInitial(() -> new float[][]{new float[0]});
    /**
     * One worker's T x T scratch: P, dP and P after dropout, slots {@link #P}, {@link #DP}, {@link #DROPPED}. Reused
     * rather than allocated per call (a quarter MB per head range per layer, a few MB of garbage per step otherwise).
     * What a call leaves in them does not matter to the next: every entry the products read (the causal triangle,
     * rounded up to whole diagonal blocks) is written first, and the dropout copy is written whole.
     */
    private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[3][0]);
    private static final int P = 0, DP = 1, DROPPED = 2;
    private static final ThreadLocal<Bf16PackedB[]> PACKED = ThreadLocal.withInitial(() -> new Bf16PackedB[]{
            new Bf16PackedB(), new Bf16PackedB(), new Bf16PackedB(), new Bf16PackedB(), new Bf16PackedB()});

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
        boolean packs = packs(precision);
        Parallel.forRange(B * nHead, 1, (lo, hi) -> {
            float[] p = scratch(P, T);
            float[] dropped = mask != null ? scratch(DROPPED, T) : null;
            Bf16PackedB[] pk = packs ? PACKED.get() : null;
            for (int bh = lo; bh < hi; bh++) {
                int b = bh / nHead, h = bh % nHead;
                int q = x.offset() + b * T * C3 + h * hs;
                float[] xd = x.data();
                if (packs) {
                    pk[0].pack(true, hs, T, xd, q + C, C3);
                    pk[1].pack(false, T, hs, xd, q + 2 * C, C3);
                }
                probabilities(precision, packs ? pk[0] : null, xd, q, C, C3, T, hs, scale, p);
                float[] pd = dropped(p, mask, bh * T * T, dropped);
                for (int r0 = 0; r0 < T; r0 += BLOCK) { // y[r0, r1) = P[r0, r1)[0, r1) · v[0, r1)
                    int r1 = Math.min(T, r0 + BLOCK), y0 = b * T * C + h * hs + r0 * C;
                    if (packs) pk[1].multiplyCausal(false, r0, false, r1 - r0, 0, r1, hs, pd, r0 * T, T, yd, y0, C);
                    else precision.gemm(false, false, r1 - r0, hs, r1, 1f, pd, r0 * T, T, xd, q + 2 * C, C3, 0f, yd, y0, C);
                }
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
                    // a bf16 copy is widened one sequence (T x 3C) at a time, by the worker that reads its heads, into a
                    // buffer that stays in cache: not into an fp32 copy of all of qkv written and read back
                    int[] words = saved.bf16Words();
                    int perSequence = T * C3;
                    boolean bySequence = words != null && perSequence % Bf16.packBlock() == 0;
                    Tensor xs = bySequence ? null : saved.get();
                    Tensor dqkv = Tensor.empty(B, T, C3); // dq, dk, dv of every head written with beta 0
                    float[] dd = dqkv.data();
                    Parallel.forRange(B * nHead, 1, (lo, hi) -> {
                        float[] p = scratch(P, T), dp = scratch(DP, T);
                        float[] dropped = mask != null ? scratch(DROPPED, T) : null;
                        Bf16PackedB[] pk = packs ? PACKED.get() : null;
                        float[] sequence = bySequence ? widened(perSequence) : null;
                        int widenedB = -1;
                        for (int bh = lo; bh < hi; bh++) {
                            int b = bh / nHead, h = bh % nHead;
                            float[] qd;
                            int base; // where sequence b's qkv starts in qd
                            if (bySequence) {
                                if (b != widenedB) Bf16.unpack(words, B * perSequence, b * perSequence, perSequence, sequence, 0);
                                widenedB = b;
                                qd = sequence;
                                base = 0;
                            } else {
                                qd = xs.data();
                                base = xs.offset() + b * perSequence;
                            }
                            int q = base + h * hs, k = q + C, v = q + 2 * C;
                            int dq = b * T * C3 + h * hs, dk = dq + C, dv = dq + 2 * C;
                            int dy = go + b * T * C + h * hs;
                            int a = bh * T * T;
                            if (packs) { // kᵀ, vᵀ, k, dy, q
                                pk[0].pack(true, hs, T, qd, k, C3);
                                pk[1].pack(true, hs, T, qd, v, C3);
                                pk[2].pack(false, T, hs, qd, k, C3);
                                pk[3].pack(false, T, hs, gd, dy, C);
                                pk[4].pack(false, T, hs, qd, q, C3);
                            }
                            probabilities(precision, packs ? pk[0] : null, qd, q, C, C3, T, hs, scale, p);
                            float[] pd = dropped(p, mask, a, dropped);
                            for (int r0 = 0; r0 < T; r0 += BLOCK) { // dP and dS of rows [r0, r1), then dq
                                int r1 = Math.min(T, r0 + BLOCK);
                                if (packs) pk[1].multiplyCausal(true, r0, false, r1 - r0, 0, hs, r1, gd, dy + r0 * C, C, dp, r0 * T, T);
                                else precision.gemm(false, true, r1 - r0, r1, hs, 1f, gd, dy + r0 * C, C, qd, v, C3,
                                        0f, dp, r0 * T, T);
                                for (int t = r0; t < r1; t++) {
                                    if (mask != null)
                                        for (int i = t * T; i < t * T + t + 1; i++) dp[i] *= mask[a + i];
                                    SoftmaxKernel.softmaxPrefixBackward(p, t * T, dp, t * T, dp, t * T, t + 1, r1, scale);
                                }
                                if (packs) pk[2].multiplyCausal(false, r0, false, r1 - r0, 0, r1, hs, dp, r0 * T, T, dd, dq + r0 * C3, C3);
                                else precision.gemm(false, false, r1 - r0, hs, r1, 1f, dp, r0 * T, T, qd, k, C3,
                                        0f, dd, dq + r0 * C3, C3);
                            }
                            for (int c0 = 0; c0 < T; c0 += BLOCK) { // dv, dk of keys [c0, c1): rows [c0, T) only
                                int c1 = Math.min(T, c0 + BLOCK), rows = T - c0;
                                if (packs) {
                                    pk[3].multiply(true, c1 - c0, c0, T, hs, pd, c0 * T + c0, T, dd, dv + c0 * C3, C3);
                                    pk[4].multiply(true, c1 - c0, c0, T, hs, dp, c0 * T + c0, T, dd, dk + c0 * C3, C3);
                                    continue;
                                }
                                precision.gemm(true, false, c1 - c0, hs, rows, 1f, pd, c0 * T + c0, T,
                                        gd, dy + c0 * C, C, 0f, dd, dv + c0 * C3, C3);
                                precision.gemm(true, false, c1 - c0, hs, rows, 1f, dp, c0 * T + c0, T,
                                        qd, q + c0 * C3, C3, 0f, dd, dk + c0 * C3, C3);
                            }
                        }
                    });
                    if (xs != null) saved.done(xs);
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

    /**
     * P of one head into p (T × T, row-major): per row block [r0, r1), S = q[r0, r1)·k[0, r1)ᵀ in {@code precision}
     * (from {@code keysT}, kᵀ packed, when not null),
     * then the causal softmax of S/√hs row by row, zero up to r1. Entries right of a row's block end are not written.
     */
    private static void probabilities(Precision precision, Bf16PackedB keysT, float[] qkv, int q, int c, int c3, int t,
                                      int hs, float scale, float[] p) {
        for (int r0 = 0; r0 < t; r0 += BLOCK) {
            int r1 = Math.min(t, r0 + BLOCK);
            if (keysT != null) keysT.multiplyCausal(true, r0, false, r1 - r0, 0, hs, r1, qkv, q + r0 * c3, c3, p, r0 * t, t);
            else precision.gemm(false, true, r1 - r0, r1, hs, 1f, qkv, q + r0 * c3, c3, qkv, q + c, c3, 0f, p, r0 * t, t);
            for (int r = r0; r < r1; r++) SoftmaxKernel.softmaxPrefix(p, r * t, r + 1, r1, scale);
        }
    }

    /** This worker's T x T buffer in {@code slot} of {@link #SCRATCH}. */
    private static float[] scratch(int slot, int t) {
        float[][] holder = SCRATCH.get();
        if (holder[slot].length != t * t) holder[slot] = new float[t * t];
        return holder[slot];
    }

    /** This worker's buffer for one widened sequence of qkv, at least {@code floats} long. */
    private static float[] widened(int floats) {
        float[][] holder = WIDENED.get();
        if (holder[0].length < floats) holder[0] = new float[floats];
        return holder[0];
    }

    /** Whether the products go through {@link Bf16PackedB}: bf16 on the native kernel. */
    private static boolean packs(Precision precision) {
        return precision == Precision.BF16 && Bf16PackedB.available();
    }

    /** P with the dropout mask (from mask[a]) applied into {@code scratch}, or P itself without dropout. */
    private static float[] dropped(float[] p, float[] mask, int a, float[] scratch) {
        if (mask == null) return p;
        for (int i = 0; i < p.length; i++) scratch[i] = p[i] * mask[a + i];
        return scratch;
    }
}
