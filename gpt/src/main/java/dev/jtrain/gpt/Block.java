package dev.jtrain.gpt;

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

    Block(GptConfig config, Rng init, Rng dropoutRng) {
        ln1 = registerModule("ln_1", new LayerNorm(config.nEmbd(), config.bias()));
        attn = registerModule("attn", new CausalSelfAttention(config, init, dropoutRng));
        ln2 = registerModule("ln_2", new LayerNorm(config.nEmbd(), config.bias()));
        mlp = registerModule("mlp", new Mlp(config, init, dropoutRng));
    }

    /** x (B, T, C) → (B, T, C). */
    public Tensor forward(Tensor x) {
        x = x.add(attn.forward(ln1.forward(x)));
        return x.add(mlp.forward(ln2.forward(x)));
    }
}
