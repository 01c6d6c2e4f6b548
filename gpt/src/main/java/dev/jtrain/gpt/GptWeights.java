package dev.jtrain.gpt;

import dev.jtrain.gpt.io.Gpt2Checkpoint;
import dev.jtrain.gpt.io.HfConfig;
import dev.jtrain.tensor.Tensor;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

/**
 * Binds a {@link Gpt} to Hugging Face GPT-2 safetensors files ({@link Gpt2Checkpoint} does names, Conv1D transposes
 * and validation), so a user can fine-tune a GPT-2 checkpoint downloaded elsewhere and hand the result back.
 * The embedding rows past the real vocabulary (padding to a multiple of 64) start at zero and are not saved.
 */
public final class GptWeights {
    private GptWeights() {}

    /** Reads config.json beside {@code weights} (n_head cannot be inferred from shapes) and loads the tensors. */
    public static Gpt loadHuggingFace(Path weights, float dropout, long seed) {
        Path json = weights.toAbsolutePath().resolveSibling("config.json");
        if (!Files.isRegularFile(json))
            throw new IllegalArgumentException("no config.json beside the weights (" + json + "): GPT-2's n_head cannot be "
                    + "inferred from tensor shapes; put the model's Hugging Face config.json there");
        GptConfig c = HfConfig.read(json).config();
        GptConfig cfg = new GptConfig(c.nLayer(), c.nHead(), c.nEmbd(), c.blockSize(), c.vocabSize(), dropout, c.bias());
        Gpt model = Gpt.withWeightsDeferred(cfg, seed); // every parameter comes from the file (a missing one fails)
        Map<String, Tensor> params = model.namedParameters();
        Gpt2Checkpoint.load(weights, cfg, (name, shape, data) -> {
            Tensor p = params.get(name);
            Arrays.fill(p.data(), p.offset(), p.offset() + p.numel(), 0f);
            System.arraycopy(data, 0, p.data(), p.offset(), data.length);
        });
        model.discardDeferredWeights();
        return model;
    }

    /** Writes Hugging Face GPT-2 names and layouts (unpadded vocabulary) and a config.json beside the file. */
    public static void saveHuggingFace(Gpt model, Path file) {
        Map<String, Tensor> params = model.namedParameters();
        Gpt2Checkpoint.save(file, model.config(), (name, dst) -> {
            Tensor p = params.get(name);
            System.arraycopy(p.data(), p.offset(), dst, 0, dst.length);
        });
        HfConfig.write(file.toAbsolutePath().resolveSibling("config.json"), model.config());
    }
}
