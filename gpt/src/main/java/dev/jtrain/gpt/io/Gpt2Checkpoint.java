package dev.jtrain.gpt.io;

import dev.jtrain.gpt.GptConfig;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.io.SafetensorsWriter;
import dev.jtrain.tensor.io.TensorInfo;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Loads and saves GPT-2 weights in Hugging Face's safetensors naming and layout, as plain float arrays in
 * jtrain's naming and layout (see {@link Gpt2Names}), so a model, an optimizer test or a checkpoint tool
 * can use it without a Tensor class.
 *
 * <p>Loading is strict: every parameter of the config must be present exactly once (with or without the
 * "transformer." prefix) with the expected shape, and no unknown tensor may be present; mask buffers and
 * a stored lm_head.weight (tied to wte) are skipped. Any dtype the reader converts (F32, F16, BF16, F64)
 * is accepted.
 */
public final class Gpt2Checkpoint {
    /** Receives one parameter in jtrain layout. */
    @FunctionalInterface
    public interface ParameterSink {
        void accept(String jtrainName, long[] shape, float[] data);
    }

    /** Fills {@code dst} (exactly numel long) with a parameter in jtrain layout. */
    @FunctionalInterface
    public interface ParameterSource {
        void read(String jtrainName, float[] dst);
    }

    private Gpt2Checkpoint() {
    }

    /** Reads every parameter of {@code config} from an HF GPT-2 safetensors file, in nanoGPT order. */
    public static LinkedHashMap<String, float[]> load(Path file, GptConfig config) {
        Map<String, float[]> got = new HashMap<>();
        load(file, config, (name, shape, data) -> got.put(name, data));
        LinkedHashMap<String, float[]> ordered = new LinkedHashMap<>();
        for (String n : Gpt2Names.jtrainNames(config)) ordered.put(n, got.get(n));
        return ordered;
    }

    /** Streams every parameter of {@code config} to {@code sink}, in file order. */
    public static void load(Path file, GptConfig config, ParameterSink sink) {
        try (SafetensorsReader r = SafetensorsReader.open(file)) {
            Map<String, String> hfByJtrain = new HashMap<>();
            List<String> expected = Gpt2Names.jtrainNames(config);
            for (String hf : r.names()) {
                String j;
                try {
                    j = Gpt2Names.toJtrain(hf).orElse(null);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("unexpected tensor in GPT-2 checkpoint: file=" + file + ", tensor=" + hf
                            + "; " + e.getMessage(), e);
                }
                if (j == null) continue;
                if (!expected.contains(j))
                    throw new IllegalArgumentException("tensor does not belong to this config: file=" + file + ", tensor=" + hf
                            + ", nLayer=" + config.nLayer() + ", bias=" + config.bias() + "; check config.json");
                String prev = hfByJtrain.put(j, hf);
                if (prev != null)
                    throw new IllegalArgumentException("parameter stored twice: file=" + file + ", tensors=" + prev + " and " + hf);
            }
            List<String> missing = expected.stream().filter(n -> !hfByJtrain.containsKey(n)).toList();
            if (!missing.isEmpty())
                throw new IllegalArgumentException("GPT-2 checkpoint is missing " + missing.size() + " parameters: file=" + file
                        + ", missing=" + missing.subList(0, Math.min(5, missing.size())) + (missing.size() > 5 ? "..." : ""));
            checkTiedHead(r, hfByJtrain.get(Gpt2Names.PREFIX + "wte.weight"));
            for (String hf : r.names()) {
                String j = Gpt2Names.toJtrain(hf).orElse(null);
                if (j == null) continue;
                TensorInfo info = r.info(hf);
                long[] want = Gpt2Names.hfShape(hf, config);
                if (!Arrays.equals(info.shape(), want))
                    throw new IllegalArgumentException("shape mismatch: file=" + file + ", tensor=" + hf + ", stored="
                            + Arrays.toString(info.shape()) + ", expected=" + Arrays.toString(want) + " for " + config);
                float[] data = r.readFloats(hf);
                if (Gpt2Names.needsTranspose(hf)) data = Transpose.transpose(data, (int) want[0], (int) want[1]);
                sink.accept(j, Gpt2Names.jtrainShape(j, config), data);
            }
        }
    }

    /**
     * A stored lm_head.weight is accepted only if it equals wte (a tied model saved with both); a fine-tuned
     * untied head would be silently dropped otherwise.
     */
    private static void checkTiedHead(SafetensorsReader r, String wteName) {
        for (String hf : r.names()) {
            if (!Gpt2Names.isTiedLmHead(hf)) continue;
            if (!Arrays.equals(r.info(hf).shape(), r.info(wteName).shape()) || !Arrays.equals(r.readFloats(hf), r.readFloats(wteName)))
                throw new IllegalArgumentException("lm_head.weight differs from wte.weight: file=" + r.file() + ", tensor=" + hf
                        + "; jtrain ties the output head to the token embedding and cannot load an untied head");
        }
    }

    /** Writes parameters in HF GPT-2 naming (no "transformer." prefix) and Conv1D layout, plus {"format": "pt"} metadata. */
    public static void save(Path file, GptConfig config, ParameterSource source) {
        SafetensorsWriter w = new SafetensorsWriter().metadata("format", "pt");
        // each tensor is read (and transposed) only as it is written: a copy of one tensor, not of the model
        for (String j : Gpt2Names.jtrainNames(config)) {
            long[] shape = Gpt2Names.jtrainShape(j, config);
            String hf = Gpt2Names.toHf(j);
            boolean transpose = Gpt2Names.needsTranspose(hf);
            w.putLater(hf, transpose ? new long[]{shape[1], shape[0]} : shape, () -> {
                float[] data = new float[Math.toIntExact(Arrays.stream(shape).reduce(1, Math::multiplyExact))];
                source.read(j, data);
                return transpose ? Transpose.transpose(data, (int) shape[0], (int) shape[1]) : data;
            });
        }
        w.write(file);
    }

    /** {@link #save(Path, GptConfig, ParameterSource)} from a name-to-array map in jtrain layout. */
    public static void save(Path file, GptConfig config, Map<String, float[]> params) {
        save(file, config, (name, dst) -> {
            float[] src = params.get(name);
            if (src == null || src.length != dst.length)
                throw new IllegalArgumentException("parameter missing or wrong size: name=" + name + ", expected="
                        + dst.length + ", got=" + (src == null ? "none" : src.length));
            System.arraycopy(src, 0, dst, 0, dst.length);
        });
    }
}
