package dev.jtrain.gpt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.io.SafetensorsWriter;
import dev.jtrain.tensor.io.TensorInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;

/**
 * Reads and writes a {@link Gpt} as a Hugging Face GPT-2 safetensors file, so that a user can fine-tune a GPT-2
 * checkpoint downloaded elsewhere and hand the result back to Python tools.
 *
 * <p>Hugging Face stores GPT-2's projections as Conv1D, weight (in, out); jtrain keeps torch.nn.Linear's
 * (out, in), so those four matrices are transposed on the way in and out. Names are jtrain's minus the
 * {@code transformer.} prefix ({@code h.0.attn.c_attn.weight}); files that keep the prefix
 * (GPT2LMHeadModel) load too. The tied {@code lm_head.weight} and the {@code attn.bias} causal-mask buffers are
 * not parameters and are ignored. The embedding rows beyond the real vocabulary (padding) start at zero.
 */
public final class GptWeights {
    private static final Set<String> CONV1D = Set.of("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight");
    private static final String PREFIX = "transformer.";

    private GptWeights() {}

    /** Reads config.json beside {@code weights} (n_head cannot be inferred from shapes) and loads the tensors. */
    public static Gpt loadHuggingFace(Path weights, float dropout, long seed) {
        GptConfig cfg = readConfig(weights.toAbsolutePath().resolveSibling("config.json"), dropout);
        Gpt model = new Gpt(cfg, seed);
        try (SafetensorsReader r = SafetensorsReader.open(weights)) {
            for (Map.Entry<String, Tensor> e : model.namedParameters().entrySet()) {
                String name = e.getKey();
                Tensor p = e.getValue();
                String hf = name.substring(PREFIX.length());
                String stored = r.contains(hf) ? hf : r.contains(name) ? name : null;
                if (stored == null)
                    throw new IllegalArgumentException("GPT-2 weights " + weights + " have no tensor '" + hf
                            + "' (config.json says n_layer=" + cfg.nLayer() + "); is this a GPT-2 checkpoint?");
                TensorInfo info = r.info(stored);
                float[] values = r.readFloats(stored);
                int[] shape = p.shape();
                boolean conv = isConv1D(hf);
                long[] expect = conv ? new long[]{shape[1], shape[0]} : toLong(shape);
                if (hf.equals("wte.weight")) expect[0] = cfg.vocabSize();
                if (!Arrays.equals(info.shape(), expect))
                    throw new IllegalArgumentException("tensor '" + stored + "' in " + weights + " has shape "
                            + Arrays.toString(info.shape()) + ", expected " + Arrays.toString(expect) + " for " + cfg);
                float[] dst = p.data();
                int off = p.offset();
                if (conv) {
                    int rows = shape[0], cols = shape[1]; // ours (out, in) = theirs transposed
                    for (int i = 0; i < cols; i++)
                        for (int o = 0; o < rows; o++) dst[off + o * cols + i] = values[i * rows + o];
                } else {
                    Arrays.fill(dst, off, off + p.numel(), 0f);
                    System.arraycopy(values, 0, dst, off, values.length);
                }
            }
        }
        return model;
    }

    /** Writes Hugging Face GPT-2 names and layouts (unpadded vocabulary) and a config.json beside the file. */
    public static void saveHuggingFace(Gpt model, Path file) {
        GptConfig cfg = model.config();
        SafetensorsWriter w = new SafetensorsWriter();
        for (Map.Entry<String, Tensor> e : model.namedParameters().entrySet()) {
            String hf = e.getKey().substring(PREFIX.length());
            Tensor p = e.getValue();
            float[] v = p.toArray();
            int[] shape = p.shape();
            if (isConv1D(hf)) {
                int rows = shape[0], cols = shape[1];
                float[] t = new float[v.length];
                for (int o = 0; o < rows; o++)
                    for (int i = 0; i < cols; i++) t[i * rows + o] = v[o * cols + i];
                w.put(hf, new long[]{cols, rows}, t);
            } else if (hf.equals("wte.weight")) {
                w.put(hf, new long[]{cfg.vocabSize(), shape[1]}, v, 0, cfg.vocabSize() * shape[1]);
            } else {
                w.put(hf, toLong(shape), v);
            }
        }
        w.metadata("format", "pt");
        w.write(file);
        writeConfig(cfg, file.toAbsolutePath().resolveSibling("config.json"));
    }

    private static boolean isConv1D(String hfName) {
        for (String s : CONV1D) if (hfName.endsWith(s)) return true;
        return false;
    }

    private static long[] toLong(int[] s) {
        long[] out = new long[s.length];
        for (int i = 0; i < s.length; i++) out[i] = s[i];
        return out;
    }

    static GptConfig readConfig(Path json, float dropout) {
        if (!Files.isRegularFile(json))
            throw new IllegalArgumentException("no config.json beside the weights (" + json + "): GPT-2's n_head cannot be "
                    + "inferred from tensor shapes; put the model's Hugging Face config.json there");
        try {
            JsonNode c = new ObjectMapper().readTree(json.toFile());
            String act = c.path("activation_function").asText("gelu_new");
            if (!act.equals("gelu_new") && !act.equals("gelu_pytorch_tanh"))
                throw new IllegalArgumentException(json + ": activation_function '" + act + "' is not supported (jtrain's GELU is the tanh approximation, gelu_new)");
            int ctx = c.has("n_positions") ? c.get("n_positions").asInt() : require(c, "n_ctx", json);
            return new GptConfig(require(c, "n_layer", json), require(c, "n_head", json), require(c, "n_embd", json), ctx,
                    require(c, "vocab_size", json), dropout, true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + json, e);
        }
    }

    private static int require(JsonNode c, String key, Path json) {
        if (!c.has(key)) throw new IllegalArgumentException(json + " lacks \"" + key + "\"");
        return c.get(key).asInt();
    }

    private static void writeConfig(GptConfig cfg, Path json) {
        var root = new ObjectMapper().createObjectNode()
                .put("model_type", "gpt2").put("architectures", (String) null)
                .put("n_layer", cfg.nLayer()).put("n_head", cfg.nHead()).put("n_embd", cfg.nEmbd())
                .put("n_positions", cfg.blockSize()).put("n_ctx", cfg.blockSize()).put("vocab_size", cfg.vocabSize())
                .put("activation_function", "gelu_new").put("layer_norm_epsilon", 1e-5);
        root.putArray("architectures").add("GPT2LMHeadModel");
        try {
            new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(json.toFile(), root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + json, e);
        }
    }
}
