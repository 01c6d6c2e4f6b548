package dev.jtrain.gpt.io;

import dev.jtrain.gpt.GptConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Tensor names and layouts of Hugging Face GPT-2 checkpoints versus jtrain's (which are nanoGPT's).
 *
 * <pre>
 *  Hugging Face (GPT2Model; GPT2LMHeadModel adds "transformer.")   jtrain / nanoGPT                      shape (jtrain)
 *  wte.weight                 [V, C]                                transformer.wte.weight                [V, C]
 *  wpe.weight                 [T, C]                                transformer.wpe.weight                [T, C]
 *  h.N.ln_1.weight|bias       [C]                                   transformer.h.N.ln_1.weight|bias      [C]
 *  h.N.attn.c_attn.weight     [C, 3C]  Conv1D (in, out)   T         transformer.h.N.attn.c_attn.weight    [3C, C] Linear (out, in)
 *  h.N.attn.c_attn.bias       [3C]                                  transformer.h.N.attn.c_attn.bias      [3C]
 *  h.N.attn.c_proj.weight     [C, C]   Conv1D             T         transformer.h.N.attn.c_proj.weight    [C, C]
 *  h.N.attn.c_proj.bias       [C]                                   transformer.h.N.attn.c_proj.bias      [C]
 *  h.N.ln_2.weight|bias       [C]                                   transformer.h.N.ln_2.weight|bias      [C]
 *  h.N.mlp.c_fc.weight        [C, 4C]  Conv1D             T         transformer.h.N.mlp.c_fc.weight       [4C, C]
 *  h.N.mlp.c_fc.bias          [4C]                                  transformer.h.N.mlp.c_fc.bias         [4C]
 *  h.N.mlp.c_proj.weight      [4C, C]  Conv1D             T         transformer.h.N.mlp.c_proj.weight     [C, 4C]
 *  h.N.mlp.c_proj.bias        [C]                                   transformer.h.N.mlp.c_proj.bias       [C]
 *  ln_f.weight|bias           [C]                                   transformer.ln_f.weight|bias          [C]
 *  h.N.attn.bias, h.N.attn.masked_bias   causal-mask buffers: ignored
 *  lm_head.weight             tied to wte: not stored by jtrain (accepted and ignored when present)
 * </pre>
 *
 * HF's Conv1D stores weights (in, out) and computes x @ W; torch's Linear stores (out, in) and computes
 * x @ W^T, so the four matrices marked T are transposed on the way in and out (what nanoGPT's
 * {@code from_pretrained} does). Shapes here use the unpadded {@link GptConfig#vocabSize()}: padding to
 * {@link GptConfig#paddedVocabSize()} is the model's business.
 *
 * <p>Stateless; thread-safe.
 */
public final class Gpt2Names {
    public static final String PREFIX = "transformer.";
    public static final String LM_HEAD = "lm_head.weight";

    private static final Pattern BLOCK = Pattern.compile("h\\.(\\d+)\\.(.+)");
    /** Per-block parameters in nanoGPT's named_parameters() order. */
    private static final List<String> BLOCK_PARAMS = List.of(
            "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
            "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias");
    private static final List<String> TRANSPOSED = List.of(
            "attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight");
    private static final List<String> BUFFERS = List.of("attn.bias", "attn.masked_bias");

    private Gpt2Names() {
    }

    /** {@code hfName} without a leading "transformer." (GPT2LMHeadModel checkpoints carry it, GPT2Model ones don't). */
    public static String stripPrefix(String hfName) {
        return hfName.startsWith(PREFIX) ? hfName.substring(PREFIX.length()) : hfName;
    }

    /** True for the causal-mask buffers older checkpoints store ({@code h.N.attn.bias}, {@code h.N.attn.masked_bias}). */
    public static boolean isIgnoredBuffer(String hfName) {
        Matcher m = BLOCK.matcher(stripPrefix(hfName));
        return m.matches() && BUFFERS.contains(m.group(2));
    }

    /** True for {@code lm_head.weight}, which jtrain ties to wte instead of storing. */
    public static boolean isTiedLmHead(String hfName) {
        return stripPrefix(hfName).equals(LM_HEAD);
    }

    /**
     * jtrain name of a Hugging Face tensor; empty for tensors jtrain does not load (mask buffers, the tied lm_head).
     *
     * @throws IllegalArgumentException if {@code hfName} is not a GPT-2 tensor name
     */
    public static Optional<String> toJtrain(String hfName) {
        if (isIgnoredBuffer(hfName) || isTiedLmHead(hfName)) return Optional.empty();
        String n = stripPrefix(hfName);
        switch (n) {
            case "wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias" -> {
                return Optional.of(PREFIX + n);
            }
            default -> {
                Matcher m = BLOCK.matcher(n);
                if (m.matches() && BLOCK_PARAMS.contains(m.group(2))) return Optional.of(PREFIX + n);
                throw new IllegalArgumentException("not a GPT-2 tensor name: name=" + hfName + "; expected wte.weight, wpe.weight, "
                        + "h.N.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,mlp.c_proj}.{weight,bias}, ln_f.{weight,bias}"
                        + " (optionally prefixed with \"transformer.\")");
            }
        }
    }

    /** True if the tensor is a Conv1D weight that must be transposed between HF (in, out) and jtrain (out, in). */
    public static boolean needsTranspose(String hfName) {
        Matcher m = BLOCK.matcher(stripPrefix(hfName));
        return m.matches() && TRANSPOSED.contains(m.group(2));
    }

    /** Hugging Face name (GPT2Model style, no "transformer." prefix, as openai-community/gpt2 ships) of a jtrain name. */
    public static String toHf(String jtrainName) {
        if (!jtrainName.startsWith(PREFIX))
            throw new IllegalArgumentException("not a jtrain GPT-2 parameter name (expected prefix \"transformer.\"): name=" + jtrainName);
        String hf = jtrainName.substring(PREFIX.length());
        toJtrain(hf);  // validates
        return hf;
    }

    /** All jtrain parameter names of {@code config}, in nanoGPT's order (lm_head excluded: tied). */
    public static List<String> jtrainNames(GptConfig config) {
        List<String> out = new ArrayList<>();
        out.add(PREFIX + "wte.weight");
        out.add(PREFIX + "wpe.weight");
        for (int i = 0; i < config.nLayer(); i++)
            for (String p : BLOCK_PARAMS)
                if (config.bias() || !p.endsWith(".bias")) out.add(PREFIX + "h." + i + "." + p);
        out.add(PREFIX + "ln_f.weight");
        if (config.bias()) out.add(PREFIX + "ln_f.bias");
        return out;
    }

    /** Shape of a jtrain parameter (torch Linear layout) for {@code config}, unpadded vocabulary. */
    public static long[] jtrainShape(String jtrainName, GptConfig config) {
        long c = config.nEmbd();
        String n = jtrainName.startsWith(PREFIX) ? jtrainName.substring(PREFIX.length()) : jtrainName;
        switch (n) {
            case "wte.weight" -> { return new long[]{config.vocabSize(), c}; }
            case "wpe.weight" -> { return new long[]{config.blockSize(), c}; }
            case "ln_f.weight", "ln_f.bias" -> { return new long[]{c}; }
            default -> { }
        }
        Matcher m = BLOCK.matcher(n);
        if (!m.matches() || Integer.parseInt(m.group(1)) >= config.nLayer())
            throw new IllegalArgumentException("not a parameter of this config: name=" + jtrainName + ", nLayer=" + config.nLayer());
        return switch (m.group(2)) {
            case "ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias", "attn.c_proj.bias", "mlp.c_proj.bias" -> new long[]{c};
            case "attn.c_attn.weight" -> new long[]{3 * c, c};
            case "attn.c_attn.bias" -> new long[]{3 * c};
            case "attn.c_proj.weight" -> new long[]{c, c};
            case "mlp.c_fc.weight" -> new long[]{4 * c, c};
            case "mlp.c_fc.bias" -> new long[]{4 * c};
            case "mlp.c_proj.weight" -> new long[]{c, 4 * c};
            default -> throw new IllegalArgumentException("not a parameter of this config: name=" + jtrainName);
        };
    }

    /** Shape of the same tensor as Hugging Face stores it: the jtrain shape, reversed for transposed weights. */
    public static long[] hfShape(String hfName, GptConfig config) {
        String j = toJtrain(hfName).orElseThrow(() -> new IllegalArgumentException("tensor is not loaded: name=" + hfName));
        long[] s = jtrainShape(j, config);
        return needsTranspose(hfName) ? new long[]{s[1], s[0]} : s;
    }
}
