package dev.jtrain.gpt;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class GptWeightsTest {
    @Test
    void saveThenLoadGivesTheSameLogits(@TempDir Path dir) {
        GptConfig cfg = new GptConfig(2, 2, 16, 8, 50, 0f, true); // vocab 50 padded to 64
        Gpt a = new Gpt(cfg, 3);
        Path file = dir.resolve("model.safetensors");
        GptWeights.saveHuggingFace(a, file);
        Gpt b = GptWeights.loadHuggingFace(file, 0f, 99);
        int[] ids = new int[16];
        Rng rng = new Rng(1);
        for (int i = 0; i < ids.length; i++) ids[i] = rng.nextInt(50);
        Tensor la = a.forward(ids, 2, 8), lb = b.forward(ids, 2, 8);
        float[] x = la.toArray(), y = lb.toArray();
        // Real-vocabulary logits must match exactly; padding rows are zero after loading, so their logits differ.
        for (int r = 0; r < 16; r++)
            for (int v = 0; v < 50; v++) assertThat(y[r * 64 + v]).isEqualTo(x[r * 64 + v]);
    }
}
