package dev.jtrain.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jtrain.autograd.Autocast;
import dev.jtrain.autograd.GradMode;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.data.Batch;
import dev.jtrain.gpt.data.ConsecutiveWindows;
import dev.jtrain.gpt.data.TokenFile;
import dev.jtrain.gpt.data.Tokenizers;
import dev.jtrain.gpt.data.Tokens;
import dev.jtrain.gpt.GptWeights;
import dev.jtrain.tensor.kernel.Precision;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jtrain eval}: mean next-token cross-entropy of a GPT-2-format model on the first B consecutive windows of
 * the data (window b: inputs tokens[b·T, b·T+T), targets shifted by one), the layout a PyTorch script reproduces
 * with plain slicing, so the two losses can be compared for parity.
 */
@Command(name = "eval", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Mean cross-entropy of a GPT-2 safetensors model on token data (.bin uint16) or text.")
final class EvalCommand implements Callable<Integer> {
    @Option(names = "--init-from", required = true, description = "model.safetensors (Hugging Face GPT-2 names; config.json beside it).")
    Path weights;
    @Option(names = "--data", required = true, description = "Raw little-endian uint16 token file (.bin) or a text file.")
    Path data;
    @Option(names = "--tokenizer", defaultValue = "gpt2", description = "Tokenizer for text data (default: ${DEFAULT-VALUE}).")
    String tokenizer;
    @Option(names = "--batch", defaultValue = "4", description = "Windows per forward pass (default: ${DEFAULT-VALUE}).") int batch;
    @Option(names = "--block", description = "Window length T (default: the model's context).") Integer block;
    @Option(names = "--precision", defaultValue = "fp32", description = "Matmul precision: fp32, or bf16 (bf16 operands, fp32 "
            + "accumulation, as torch.autocast) (default: ${DEFAULT-VALUE}).") String precision;
    @Option(names = "--json", description = "Print one JSON object.") boolean json;

    @Override
    public Integer call() throws Exception {
        Precision prec = Precision.parse(precision);
        Gpt model = GptWeights.loadHuggingFace(weights, 0f, 0);
        int t = block != null ? block : model.config().blockSize();
        if (t > model.config().blockSize())
            throw new IllegalArgumentException("--block " + t + " exceeds the model's context " + model.config().blockSize());
        Tokens tokens = data.toString().endsWith(".bin")
                ? TokenFile.open(data)
                : Tokens.of(Tokenizers.byName(tokenizer).encode(Files.readString(data, StandardCharsets.UTF_8)));
        Batch b = new ConsecutiveWindows(tokens, t).first(batch);
        for (int id : b.x())
            if (id >= model.config().vocabSize())
                throw new IllegalArgumentException("token id " + id + " in " + data + " is outside the model's vocabulary ("
                        + model.config().vocabSize() + ")");
        model.train(false);
        long t0 = System.nanoTime();
        float loss;
        try (var g = GradMode.noGrad(); var cast = Autocast.with(prec)) {
            loss = model.loss(b.x(), b.y(), batch, t).item();
        }
        double ms = (System.nanoTime() - t0) / 1e6;
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("loss", loss);
            out.put("batch", batch);
            out.put("block", t);
            out.put("tokens", batch * t);
            out.put("ms", ms);
            out.put("precision", prec.label());
            System.out.println(new ObjectMapper().writeValueAsString(out));
        } else {
            System.out.printf("loss %.6f nats/token over %d x %d tokens (%.0f ms, %s)%n", loss, batch, t, ms, prec.label());
        }
        return 0;
    }
}
