package dev.jtrain.gpt;

import dev.jtrain.autograd.Checkpoint;
import dev.jtrain.autograd.F;
import dev.jtrain.autograd.GradMode;
import dev.jtrain.nn.Embedding;
import dev.jtrain.nn.LayerNorm;
import dev.jtrain.nn.Module;
import dev.jtrain.nn.ShardedModel;
import dev.jtrain.nn.UnitHooks;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Precision;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * GPT-2 / nanoGPT: token + position embeddings, n_layer pre-norm blocks, final LayerNorm, and an LM head tied to
 * the token embedding (Press &amp; Wolf 2017). Parameter names follow nanoGPT ({@code transformer.h.0.attn.c_attn.weight},
 * Linear weights as (out, in)), so its checkpoints and Hugging Face GPT-2 weights map one to one.
 */
public final class Gpt extends Module implements LanguageModel, ShardedModel {
    /** The "transformer" sub-tree, only to give parameters nanoGPT's names. */
    static final class Transformer extends Module {
        final Embedding wte;
        final Embedding wpe;
        final List<Block> h = new ArrayList<>();
        final LayerNorm lnF;

        Transformer(GptConfig c, WeightInit init, Rng dropoutRng) {
            wte = registerModule("wte", new Embedding(init.normal(0.02f, c.paddedVocabSize(), c.nEmbd())));
            wpe = registerModule("wpe", new Embedding(init.normal(0.02f, c.blockSize(), c.nEmbd())));
            Module list = registerModule("h", new Module() {});
            for (int i = 0; i < c.nLayer(); i++) h.add(list.registerChild(Integer.toString(i), new Block(c, init, dropoutRng)));
            lnF = registerModule("ln_f", new LayerNorm(c.nEmbd(), c.bias()));
        }
    }

    private final GptConfig config;
    private final Transformer transformer;
    private final Rng dropoutRng;
    private final WeightInit init;
    private boolean activationCheckpointing;
    private BlockTracer tracer;
    private UnitHooks unitHooks;

    /** Builds a model with GPT-2 initialisation from {@code seed}; dropout masks come from a generator seeded alike. */
    public Gpt(GptConfig config, long seed) {
        this(config, seed, true);
    }

    private Gpt(GptConfig config, long seed, boolean draw) {
        this.config = config;
        this.dropoutRng = new Rng(seed ^ 0x5DEECE66DL);
        this.init = new WeightInit(seed);
        this.transformer = registerModule("transformer", new Transformer(config, init, dropoutRng));
        if (draw) init.draw();
    }

    /**
     * A model whose weight matrices stay zero until {@link #drawWeights}, for a run that will load them from a
     * checkpoint (the draw is wasted there: seconds for a real model). Drawn later, they are bitwise what
     * {@link #Gpt(GptConfig, long)} gives. Norms and biases are set as usual.
     */
    public static Gpt withWeightsDeferred(GptConfig config, long seed) {
        return new Gpt(config, seed, false);
    }

    /**
     * Draws the deferred initialisation into the parameters wherever they live now (a flat buffer may hold them);
     * nothing if it was drawn or discarded. Not after a sharded strategy has taken the parameters apart.
     */
    public void drawWeights() { init.draw(); }

    /** The weights came from a checkpoint: the deferred draws are dropped and {@link #drawWeights} does nothing. */
    public void discardDeferredWeights() { init.discard(); }

    /** Whether the weight matrices still wait for {@link #drawWeights}. */
    public boolean weightsDeferred() { return init.pending(); }

    public GptConfig config() { return config; }

    @Override public Module module() { return this; }

    @Override
    public Map<String, String> shapeMetadata() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("gpt.n_layer", Integer.toString(config.nLayer()));
        m.put("gpt.n_head", Integer.toString(config.nHead()));
        m.put("gpt.n_embd", Integer.toString(config.nEmbd()));
        m.put("gpt.block_size", Integer.toString(config.blockSize()));
        m.put("gpt.vocab_size", Integer.toString(config.vocabSize()));
        m.put("gpt.dropout", Float.toString(config.dropout()));
        m.put("gpt.bias", Boolean.toString(config.bias()));
        return m;
    }

    @Override
    public Rng dropoutRng() { return dropoutRng; }

    /** Recompute each block's activations in backward instead of storing them. */
    @Override
    public void setActivationCheckpointing(boolean on) { this.activationCheckpointing = on; }

    public boolean activationCheckpointing() { return activationCheckpointing; }

    /** Times every block's forward and backward (null: off). */
    @Override
    public void setTracer(BlockTracer tracer) { this.tracer = tracer; }

    /**
     * Bytes of activations a micro-batch of {@code rows} windows needs, predicted from the shape: what backward keeps
     * per token and block (fp32: the inputs of both norms and all four products, qkv and GELU's input, 16·C floats;
     * bf16: the norms' inputs in fp32 and the other 14·C values in bf16; with checkpointing only each block's input
     * plus one block recomputed), the head's kept state, and the largest transients (the fp32 logits while the loss is
     * computed, one block's fp32 temporaries: 16·C floats, 12·C in bf16, whose GELU backward widens its saved input
     * a piece at a time instead of into a 4·C copy). On the GPT-2 124M shape it is within 5% of the step's measured
     * working set in both precisions.
     */
    public static long activationBytes(GptConfig c, int rows, Precision precision, boolean checkpointing) {
        long C = c.nEmbd(), L = c.nLayer(), V = c.paddedVocabSize(), tokens = (long) rows * c.blockSize();
        boolean bf16 = precision == Precision.BF16;
        long fp32Block = 16 * C * 4, block = bf16 ? 2 * C * 4 + 14 * C * 2 : fp32Block;
        if (c.dropout() > 0) block += ((long) c.nHead() * c.blockSize() + 3 * C) * 4; // attention's and the residual masks
        long kept = (checkpointing ? L * C * 4 + block : L * block) + 2 * C * 4 + V * (bf16 ? 2 : 4);
        long temporaries = bf16 ? 12 * C * 4 : fp32Block;
        return tokens * (kept + V * 4 + temporaries);
    }

    /**
     * Parameter counts from the shape alone, for the memory check before a model exists.
     *
     * @param block   one block (a ZeRO-3 unit)
     * @param root    the parameters in no block: embeddings, tied head, final norm
     * @param total   the whole model
     * @param largest the largest single tensor (the tied embedding, or a block's widest matrix)
     */
    public record ParameterCounts(long block, long root, long total, long largest) {}

    public static ParameterCounts parameterCounts(GptConfig c) {
        long C = c.nEmbd(), b = c.bias() ? 1 : 0;
        long block = 12 * C * C + b * 9 * C + 2 * C + b * 2 * C; // c_attn, c_proj, c_fc, mlp c_proj (+ biases); ln_1, ln_2
        long root = (long) c.paddedVocabSize() * C + (long) c.blockSize() * C + C + b * C;
        return new ParameterCounts(block, root, c.nLayer() * block + root, Math.max((long) c.paddedVocabSize() * C, 4 * C * C));
    }

    /** ZeRO-3 units: one per block; the embeddings, the tied head and the final norm are the root. */
    @Override
    public List<List<Tensor>> units() {
        List<List<Tensor>> units = new ArrayList<>();
        for (Block b : transformer.h) units.add(List.copyOf(b.namedParameters().values()));
        return units;
    }

    @Override
    public void setUnitHooks(UnitHooks hooks) { this.unitHooks = hooks; }

    public List<Block> blocks() { return transformer.h; }

    public Tensor tokenEmbedding() { return transformer.wte.weight; }

    /** idx (B·T token ids, row-major) → logits (B, T, paddedVocab). */
    public Tensor forward(int[] idx, int batch, int time) {
        if (init.pending())
            throw new IllegalStateException("the model's weights were deferred (Gpt.withWeightsDeferred) and neither drawn"
                    + " nor loaded: call drawWeights() or load a checkpoint before running it");
        if (time > config.blockSize())
            throw new IllegalArgumentException("sequence length " + time + " exceeds block size " + config.blockSize());
        UnitHooks uh = unitHooks;
        if (uh != null) uh.beforeForward(UnitHooks.ROOT);
        int[] pos = new int[time];
        for (int t = 0; t < time; t++) pos[t] = t;
        Tensor tok = transformer.wte.forward(idx, batch, time); // (B, T, C)
        Tensor posEmb = transformer.wpe.forward(pos, time);     // (T, C)
        Tensor x = tok.add(posEmb);
        tok.release();
        posEmb.release();
        x = Block.dropout(x, isTraining() ? config.dropout() : 0f, dropoutRng);
        // Each block's input is released once the block has run: the nodes that need it for backward keep it.
        for (int i = 0; i < transformer.h.size(); i++) {
            Block b = transformer.h.get(i);
            BlockTracer tr = tracer;
            final int id = i;
            long f0 = System.nanoTime();
            if (tr != null) x = F.backwardMarker(x, () -> tr.backwardEnd(id));
            Tensor out = UnitHooks.around(uh, i, x, in -> activationCheckpointing ? Checkpoint.apply(b::forward, in, dropoutRng) : b.forward(in));
            x.release();
            x = out;
            if (tr != null) {
                x = F.backwardMarker(x, () -> tr.backwardBegin(id));
                tr.forward(id, f0, System.nanoTime());
            }
        }
        Tensor h = transformer.lnF.forward(x);
        x.release();
        Tensor logits = F.linear(h, transformer.wte.weight, null); // (B, T, Vp), lm_head tied to wte
        h.release();
        return logits;
    }

    /** Mean cross-entropy of next-token prediction; targets (B·T), negative ids ignored. */
    @Override
    public Tensor loss(int[] idx, int[] targets, int batch, int time) {
        Tensor logits = forward(idx, batch, time);
        Tensor loss = F.crossEntropy(logits.reshape(batch * time, config.paddedVocabSize()), targets, config.vocabSize());
        logits.release();
        return loss;
    }

    /**
     * Training FLOPs per token, PaLM/llm.c accounting: 6N for the parameter matmuls (forward + backward) plus
     * 6·L·C·T for attention scores and values with causal masking; recompute is not counted.
     */
    @Override
    public double flopsPerToken(int time) {
        long n = parameterCount() - (long) config.blockSize() * config.nEmbd(); // wpe is a lookup, not a matmul
        return 6.0 * n + 6.0 * config.nLayer() * config.nEmbd() * time;
    }

    /** Autoregressive sampling with temperature and top-k (k ≤ 0: full distribution). */
    public int[] generate(int[] prompt, int maxNewTokens, float temperature, int topK, Rng rng) {
        boolean wasTraining = isTraining();
        train(false);
        int[] seq = Arrays.copyOf(prompt, prompt.length + maxNewTokens);
        int len = prompt.length;
        try (var g = GradMode.noGrad()) {
            for (int s = 0; s < maxNewTokens; s++) {
                int start = Math.max(0, len - config.blockSize());
                int t = len - start;
                int[] ctx = Arrays.copyOfRange(seq, start, len);
                Tensor logits = forward(ctx, 1, t);
                float[] row = new float[config.vocabSize()];
                System.arraycopy(logits.data(), logits.offset() + (t - 1) * config.paddedVocabSize(), row, 0, row.length);
                seq[len++] = Sampler.sample(row, temperature, topK, rng);
            }
        } finally {
            train(wasTraining);
        }
        return seq;
    }
}
