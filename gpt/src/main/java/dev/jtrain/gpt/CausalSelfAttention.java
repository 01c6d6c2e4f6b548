package dev.jtrain.gpt;

import dev.jtrain.autograd.F;
import dev.jtrain.nn.Linear;
import dev.jtrain.nn.Module;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

/** Multi-head causal self-attention: c_attn (C → 3C), fused attention, c_proj (C → C), residual dropout. */
public final class CausalSelfAttention extends Module {
    final Linear cAttn;
    final Linear cProj;
    private final GptConfig config;
    private final Rng rng;

    CausalSelfAttention(GptConfig config, WeightInit init, Rng dropoutRng) {
        this.config = config;
        this.rng = dropoutRng;
        int c = config.nEmbd();
        // GPT-2 scales the init of residual projections by 1/√(2·n_layer) (two residual adds per block).
        float projStd = (float) (0.02 / Math.sqrt(2.0 * config.nLayer()));
        cAttn = registerModule("c_attn", new Linear(init.normal(0.02f, 3 * c, c), config.bias() ? Tensor.zeros(3 * c) : null));
        cProj = registerModule("c_proj", new Linear(init.normal(projStd, c, c), config.bias() ? Tensor.zeros(c) : null));
    }

    /** x (B, T, C) → (B, T, C). */
    /** x (B, T, C) → (B, T, C); intermediates are released once consumed (see {@link Tensor#release}). */
    public Tensor forward(Tensor x) {
        Tensor qkv = cAttn.forward(x); // (B, T, 3C)
        float p = isTraining() ? config.dropout() : 0f;
        Tensor y = F.causalSelfAttention(qkv, config.nHead(), p, rng); // (B, T, C)
        qkv.release();
        Tensor o = cProj.forward(y);
        y.release();
        return Block.dropout(o, p, rng);
    }
}
