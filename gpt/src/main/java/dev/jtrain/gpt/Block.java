package dev.jtrain.gpt;

import dev.jtrain.autograd.F;
import dev.jtrain.nn.LayerNorm;
import dev.jtrain.nn.Module;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

/** Pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)). */
public final class Block extends Module {
    final LayerNorm ln1;
    final CausalSelfAttention attn;
    final LayerNorm ln2;
    final Mlp mlp;

    Block(GptConfig config, WeightInit init, Rng dropoutRng) {
        ln1 = registerModule("ln_1", new LayerNorm(config.nEmbd(), config.bias()));
        attn = registerModule("attn", new CausalSelfAttention(config, init, dropoutRng));
        ln2 = registerModule("ln_2", new LayerNorm(config.nEmbd(), config.bias()));
        mlp = registerModule("mlp", new Mlp(config, init, dropoutRng));
    }

    /**
     * x (B, T, C) → (B, T, C). Each intermediate is released once its consumer has run: what backward needs stays
     * with the nodes that saved it, the rest goes back to the step's arena (see {@link Tensor#release}).
     */
    public Tensor forward(Tensor x) {
        Tensor h = ln1.forward(x);
        Tensor a = attn.forward(h);
        h.release();
        Tensor x1 = x.add(a);
        a.release();
        h = ln2.forward(x1);
        Tensor m = mlp.forward(h);
        h.release();
        Tensor out = x1.add(m);
        m.release();
        x1.release();
        return out;
    }

    /** Dropout that releases its input when it made a new tensor (p = 0 returns the input itself). */
    static Tensor dropout(Tensor x, float p, Rng rng) {
        Tensor out = F.dropout(x, p, rng);
        if (out != x) x.release();
        return out;
    }
}
