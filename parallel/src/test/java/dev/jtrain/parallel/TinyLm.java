package dev.jtrain.parallel;

import dev.jtrain.autograd.F;
import dev.jtrain.nn.Embedding;
import dev.jtrain.nn.LayerNorm;
import dev.jtrain.nn.Linear;
import dev.jtrain.nn.Module;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

/**
 * A small language model for data-parallel tests (dist cannot depend on gpt): tied embedding/head, LayerNorm, a
 * GELU MLP; the same kinds of parameters (matrices with weight decay, biases and gains without) as a GPT. Odd sizes on
 * purpose so buckets and shards never divide evenly.
 */
final class TinyLm extends Module {
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

    /** Mean next-token loss of rows × time ids. */
    Tensor loss(int[] x, int[] y, int rows, int time) {
        Tensor h = wte.forward(x, rows, time);
        h = h.add(proj.forward(F.gelu(fc.forward(ln.forward(h)))));
        return F.crossEntropy(F.linear(h, wte.weight, null).reshape(rows * time, vocab), y);
    }
}
