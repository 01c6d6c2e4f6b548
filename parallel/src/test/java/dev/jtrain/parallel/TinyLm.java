package dev.jtrain.parallel;

import dev.jtrain.autograd.F;
import dev.jtrain.nn.Embedding;
import dev.jtrain.nn.LayerNorm;
import dev.jtrain.nn.Linear;
import dev.jtrain.nn.Module;
import dev.jtrain.nn.ShardedModel;
import dev.jtrain.nn.UnitHooks;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.List;

/**
 * A small language model for data-parallel tests (dist cannot depend on gpt): tied embedding/head, LayerNorm, a
 * GELU MLP; the same kinds of parameters (matrices with weight decay, biases and gains without) as a GPT. Odd sizes on
 * purpose so buckets and shards never divide evenly.
 */
final class TinyLm extends Module implements ShardedModel {
    final int vocab;
    final Embedding wte;
    final LayerNorm ln;
    final Linear fc;
    final Linear proj;

    TinyLm(int vocab, int dim, long seed) {
        Rng rng = new Rng(seed);
        this.vocab = vocab;
        wte = registerModule("wte", new Embedding(Tensor.randn(rng, 0.1f, vocab, dim)));
        ln = registerModule("ln", new LayerNorm(dim, true));
        fc = registerModule("fc", new Linear(Tensor.randn(rng, 0.1f, 3 * dim + 1, dim), Tensor.randn(rng, 0.02f, 3 * dim + 1)));
        proj = registerModule("proj", new Linear(Tensor.randn(rng, 0.1f, dim, 3 * dim + 1), Tensor.zeros(dim)));
    }

    private UnitHooks hooks;
    /** Leaves the MLP branch out of the loss, as a branch not taken: units 0 and 1 get no gradient. */
    boolean skipProj;

    /** Mean next-token loss of rows × time ids. Units for ZeRO-3: (ln, fc), (proj); the tied wte is the root. */
    Tensor loss(int[] x, int[] y, int rows, int time) {
        if (hooks != null) hooks.beforeForward(UnitHooks.ROOT);
        Tensor h = wte.forward(x, rows, time);
        Tensor a = UnitHooks.around(hooks, 0, h, t -> fc.forward(ln.forward(t)));
        if (!skipProj) h = h.add(UnitHooks.around(hooks, 1, F.gelu(a), proj::forward));
        return F.crossEntropy(F.linear(h, wte.weight, null).reshape(rows * time, vocab), y);
    }

    @Override
    public List<List<Tensor>> units() {
        return List.of(List.of(ln.weight, ln.bias, fc.weight, fc.bias), List.of(proj.weight, proj.bias));
    }

    @Override
    public void setUnitHooks(UnitHooks hooks) {
        this.hooks = hooks;
    }
}
