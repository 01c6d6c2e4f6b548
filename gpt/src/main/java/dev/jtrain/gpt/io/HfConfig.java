package dev.jtrain.gpt.io;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.jtrain.gpt.GptConfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A Hugging Face GPT-2 {@code config.json}, read into a {@link GptConfig}. Shapes alone cannot give
 * n_head, which is why {@code jtrain eval} reads this file beside the weights.
 *
 * <p>Only the variant jtrain implements is accepted; anything else is refused with the field named,
 * rather than loaded into a model that would silently compute something different: GELU with the tanh
 * approximation ({@code gelu_new}, a.k.a. {@code gelu_pytorch_tanh}), LayerNorm epsilon 1e-5, tied
 * embeddings, attention scaled by 1/sqrt(head size) only.
 *
 * @param config           the model's hyper-parameters (dropout from {@code resid_pdrop}, bias always true)
 * @param layerNormEpsilon {@code layer_norm_epsilon}
 * @param activation       {@code activation_function}
 */
public record HfConfig(GptConfig config, double layerNormEpsilon, String activation) {
    public static final double LAYER_NORM_EPSILON = 1e-5;
    public static final List<String> TANH_GELU = List.of("gelu_new", "gelu_pytorch_tanh", "gelu_fast");
    private static final JsonMapper JSON = new JsonMapper();

    /** Reads {@code file}. */
    public static HfConfig read(Path file) {
        try {
            return parse(Files.readString(file), file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Hugging Face config " + file + ": " + e.getMessage(), e);
        }
    }

    /** Parses config JSON; {@code origin} names the source in error messages. */
    public static HfConfig parse(String json, String origin) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("Hugging Face config is not valid JSON: file=" + origin + ": " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject())
            throw new IllegalArgumentException("Hugging Face config must be a JSON object: file=" + origin);
        String modelType = root.path("model_type").asText("gpt2");
        if (!modelType.equals("gpt2"))
            throw new IllegalArgumentException("unsupported model_type: file=" + origin + ", model_type=" + modelType + "; jtrain loads gpt2");
        int nLayer = positiveInt(root, origin, "n_layer");
        int nHead = positiveInt(root, origin, "n_head");
        int nEmbd = positiveInt(root, origin, "n_embd");
        int vocab = positiveInt(root, origin, "vocab_size");
        int positions = root.has("n_positions") ? positiveInt(root, origin, "n_positions") : positiveInt(root, origin, "n_ctx");
        double eps = root.path("layer_norm_epsilon").asDouble(LAYER_NORM_EPSILON);
        if (Math.abs(eps - LAYER_NORM_EPSILON) > 1e-12)
            throw new IllegalArgumentException("unsupported layer_norm_epsilon: file=" + origin + ", layer_norm_epsilon=" + eps
                    + "; jtrain's LayerNorm uses " + LAYER_NORM_EPSILON);
        String act = root.path("activation_function").asText("gelu_new");
        if (!TANH_GELU.contains(act))
            throw new IllegalArgumentException("unsupported activation_function: file=" + origin + ", activation_function=" + act
                    + "; jtrain implements GPT-2's tanh-approximated GELU " + TANH_GELU);
        requireFlag(root, origin, "tie_word_embeddings", true);
        requireFlag(root, origin, "scale_attn_weights", true);
        requireFlag(root, origin, "scale_attn_by_inverse_layer_idx", false);
        requireFlag(root, origin, "add_cross_attention", false);
        JsonNode inner = root.get("n_inner");
        if (inner != null && !inner.isNull() && !(inner.isIntegralNumber() && inner.longValue() == 4L * nEmbd))
            throw new IllegalArgumentException("unsupported n_inner: file=" + origin + ", n_inner=" + inner + ", n_embd=" + nEmbd
                    + "; jtrain's MLP width is 4 * n_embd (n_inner null)");
        if (nEmbd % nHead != 0)
            throw new IllegalArgumentException("n_embd must be divisible by n_head: file=" + origin + ", n_embd=" + nEmbd + ", n_head=" + nHead);
        float dropout = (float) root.path("resid_pdrop").asDouble(0.0);
        try {
            return new HfConfig(new GptConfig(nLayer, nHead, nEmbd, positions, vocab, dropout, true), eps, act);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid Hugging Face config: file=" + origin + ": " + e.getMessage(), e);
        }
    }

    private static int positiveInt(JsonNode root, String origin, String field) {
        JsonNode v = root.get(field);
        if (v == null)
            throw new IllegalArgumentException("missing field in Hugging Face config: file=" + origin + ", field=" + field);
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 1)
            throw new IllegalArgumentException("field must be a positive integer: file=" + origin + ", field=" + field + ", value=" + v);
        return v.intValue();
    }

    private static void requireFlag(JsonNode root, String origin, String field, boolean required) {
        JsonNode v = root.get(field);
        if (v != null && v.isBoolean() && v.booleanValue() != required)
            throw new IllegalArgumentException("unsupported GPT-2 variant: file=" + origin + ", " + field + "=" + v.booleanValue()
                    + "; jtrain requires " + field + "=" + required);
    }

    /** A GPT-2 config.json for {@code config}, loadable by {@code transformers.GPT2LMHeadModel.from_pretrained}. */
    public static String toJson(GptConfig config) {
        ObjectNode o = JSON.createObjectNode();
        o.put("model_type", "gpt2");
        o.putArray("architectures").add("GPT2LMHeadModel");
        o.put("vocab_size", config.vocabSize());
        o.put("n_positions", config.blockSize());
        o.put("n_ctx", config.blockSize());
        o.put("n_embd", config.nEmbd());
        o.put("n_layer", config.nLayer());
        o.put("n_head", config.nHead());
        o.put("activation_function", "gelu_new");
        o.put("layer_norm_epsilon", LAYER_NORM_EPSILON);
        o.put("resid_pdrop", config.dropout());
        o.put("embd_pdrop", config.dropout());
        o.put("attn_pdrop", config.dropout());
        o.put("initializer_range", 0.02);
        o.put("tie_word_embeddings", true);
        o.put("bos_token_id", 50256);
        o.put("eos_token_id", 50256);
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(o) + "\n";
        } catch (JacksonException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes {@link #toJson} to {@code file}. */
    public static void write(Path file, GptConfig config) {
        if (!config.bias())
            throw new IllegalArgumentException("GPT-2 checkpoints have biases; cannot describe a bias=false model as gpt2: config=" + config);
        try {
            Files.writeString(file, toJson(config));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }
}
