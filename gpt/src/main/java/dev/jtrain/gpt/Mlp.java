package dev.jtrain.gpt;

import dev.jtrain.autograd.F;
import dev.jtrain.nn.Linear;
import dev.jtrain.nn.Module;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

/** Position-wise feed-forward: c_fc (C → 4C), GELU (tanh), c_proj (4C → C), dropout. */
public final class Mlp extends Module {
    final Linear cFc;
    final Linear cProj;
    private final GptConfig config;
    private final Rng rng;

    Mlp(GptConfig config, WeightInit init, Rng dropoutRng) {
        this.config = config;
        this.rng = dropoutRng;
        int c = config.nEmbd();
        float projStd = (float) (0.02 / Math.sqrt(2.0 * config.nLayer()));
        cFc = registerModule("c_fc", new Linear(init.normal(0.02f, 4 * c, c), config.bias() ? Tensor.zeros(4 * c) : null));
        cProj = registerModule("c_proj", new Linear(init.normal(projStd, c, 4 * c), config.bias() ? Tensor.zeros(c) : null));
    }

    /** x (B, T, C) → (B, T, C); intermediates are released once consumed (see {@link Tensor#release}). */
    public Tensor forward(Tensor x) {
        Tensor f = cFc.forward(x); // (B, T, 4C)
        Tensor h = F.gelu(f);
        f.release();
        Tensor o = cProj.forward(h);
        h.release();
        return Block.dropout(o, isTraining() ? config.dropout() : 0f, rng);
    }
}
