package dev.jtrain.cli;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.tensor.kernel.Precision;
import dev.jtrain.train.TrainConfig;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Training settings as layered JSON: built-in default preset, then a named or file preset ({@code --preset}),
 * then command-line flags. Mutable only while being resolved; {@link #toTrainConfig} validates once.
 */
@JsonIgnoreProperties(value = {"_comment"}, ignoreUnknown = false)
public final class TrainSettings {
    @JsonProperty("n_layer") public int nLayer;
    @JsonProperty("n_head") public int nHead;
    @JsonProperty("n_embd") public int nEmbd;
    @JsonProperty("block_size") public int blockSize;
    @JsonProperty("dropout") public float dropout;
    @JsonProperty("bias") public boolean bias;
    @JsonProperty("tokenizer") public String tokenizer;
    @JsonProperty("batch_size") public int batchSize;
    @JsonProperty("grad_accum") public int gradAccum;
    @JsonProperty("max_steps") public int maxSteps;
    @JsonProperty("max_seconds") public double maxSeconds;
    @JsonProperty("learning_rate") public float learningRate;
    @JsonProperty("min_learning_rate") public float minLearningRate;
    @JsonProperty("warmup_steps") public int warmupSteps;
    @JsonProperty("decay_steps") public int decaySteps;
    @JsonProperty("weight_decay") public float weightDecay;
    @JsonProperty("grad_clip") public float gradClip;
    @JsonProperty("eval_interval") public int evalInterval;
    @JsonProperty("eval_batches") public int evalBatches;
    @JsonProperty("seed") public long seed;
    @JsonProperty("activation_checkpointing") public boolean activationCheckpointing;
    @JsonProperty("data_max_bytes") public long dataMaxBytes;
    @JsonProperty("sample_tokens") public int sampleTokens;
    /** Matmul precision: fp32, or bf16 (bf16 operands, fp32 accumulation and master weights, as autocast). */
    @JsonProperty("precision") public String precision = "fp32";
    /** Data-parallel processes when --nproc is not given. */
    @JsonProperty("nproc") public int nproc = 1;

    static final ObjectMapper JSON = new ObjectMapper();

    /** Loads the built-in default, then overlays {@code preset} (a built-in name or a JSON file path), if given. */
    public static TrainSettings load(String preset) {
        TrainSettings s = new TrainSettings();
        overlayResource(s, "default");
        if (preset == null || preset.equals("default")) return s;
        Path file = Path.of(preset);
        try {
            if (Files.isRegularFile(file)) {
                JSON.readerForUpdating(s).readValue(file.toFile());
            } else if (TrainSettings.class.getResource("/presets/" + preset + ".json") != null) {
                overlayResource(s, preset);
            } else {
                throw new IllegalArgumentException("unknown preset '" + preset + "': not a built-in (default, small, tiny) and no such file");
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read preset " + file + ": " + e.getMessage(), e);
        }
        return s;
    }

    private static void overlayResource(TrainSettings s, String name) {
        try (InputStream in = TrainSettings.class.getResourceAsStream("/presets/" + name + ".json")) {
            if (in == null) throw new IllegalStateException("built-in preset missing from the jar: " + name);
            JSON.readerForUpdating(s).readValue(in);
        } catch (IOException e) {
            throw new IllegalStateException("built-in preset " + name + " is invalid: " + e.getMessage(), e);
        }
    }

    public GptConfig modelConfig(int vocabSize) {
        return new GptConfig(nLayer, nHead, nEmbd, blockSize, vocabSize, dropout, bias);
    }

    public TrainConfig toTrainConfig(GptConfig model, double peakFlops) {
        return new TrainConfig(model, batchSize, gradAccum, maxSteps, maxSeconds, learningRate, minLearningRate,
                warmupSteps, weightDecay, gradClip, evalInterval, evalBatches, seed, activationCheckpointing,
                peakFlops, decaySteps, Precision.parse(precision)).validate();
    }
}
