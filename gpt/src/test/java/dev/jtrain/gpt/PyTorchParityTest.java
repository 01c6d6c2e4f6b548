package dev.jtrain.gpt;

import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.io.SafetensorsReader;
import org.junit.jupiter.api.Test;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Whole-model parity with PyTorch: {@code parity/make_reference.py} (committed beside the files) built a tiny GPT-2
 * in plain torch, wrote its weights in Hugging Face layout, a batch, and the float64 logits, loss and every
 * parameter's gradient. jtrain loads the weights through the same path a user's GPT-2 checkpoint takes and must
 * match in fp32: logits within 1e-5 absolute (values are O(1); fp32 rounding over 2 layers is ~1e-6), loss within
 * 1e-5, each gradient within 1e-4 of that tensor's largest reference magnitude.
 */
class PyTorchParityTest {
    private static Path resource(String name) throws URISyntaxException {
        return Path.of(PyTorchParityTest.class.getResource("/parity/" + name).toURI());
    }

    @Test
    void logitsLossAndGradientsMatchPyTorch() throws Exception {
        Gpt model = GptWeights.loadHuggingFace(resource("tiny_gpt2.safetensors"), 0f, 0);
        assertThat(model.config().paddedVocabSize()).isEqualTo(64);
        try (SafetensorsReader ref = SafetensorsReader.open(resource("tiny_gpt2_reference.safetensors"))) {
            int[] x = ref.readInts("x"), y = ref.readInts("y");
            Tensor logits = model.forward(x, 2, 16);
            float[] got = logits.toArray(), want = ref.readFloats("logits");
            assertThat(got).hasSameSizeAs(want);
            for (int i = 0; i < want.length; i++) assertThat(got[i]).as("logit %d", i).isCloseTo(want[i], within(1e-5f));

            Tensor loss = model.loss(x, y, 2, 16);
            assertThat(loss.item()).isCloseTo(ref.readFloats("loss")[0], within(1e-5f));
            loss.backward();
            int checked = 0;
            for (Map.Entry<String, Tensor> e : model.namedParameters().entrySet()) {
                String key = "grad." + e.getKey();
                assertThat(ref.contains(key)).as("reference has %s", key).isTrue();
                float[] g = e.getValue().grad().toArray(), r = ref.readFloats(key);
                float scale = 0;
                for (float v : r) scale = Math.max(scale, Math.abs(v));
                for (int i = 0; i < r.length; i++)
                    assertThat(g[i]).as("%s[%d]", key, i).isCloseTo(r[i], within(1e-4f * Math.max(scale, 1e-3f)));
                checked++;
            }
            assertThat(checked).isEqualTo(model.namedParameters().size());
        }
    }
}
