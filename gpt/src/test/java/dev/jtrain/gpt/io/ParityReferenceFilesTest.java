package dev.jtrain.gpt.io;

import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.data.Batch;
import dev.jtrain.gpt.data.ConsecutiveWindows;
import dev.jtrain.gpt.data.TokenFile;
import dev.jtrain.tensor.io.SafetensorsReader;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The files written by resources/parity/make_reference.py load through jtrain's own readers and agree
 * with each other (the model comparison itself lives with the model). Embedding activations can be checked
 * here without a model: act.emb = wte[x] + wpe[t].
 */
class ParityReferenceFilesTest {
    private static Path resource(String name) throws Exception {
        return Path.of(ParityReferenceFilesTest.class.getResource("/parity/" + name).toURI());
    }

    @Test
    void configWeightsTokensAndReferenceFitTogether() throws Exception {
        GptConfig cfg = HfConfig.read(resource("config.json")).config();
        assertThat(cfg).isEqualTo(new GptConfig(2, 2, 32, 16, 64, 0f, true));
        Map<String, float[]> w = Gpt2Checkpoint.load(resource("tiny_gpt2.safetensors"), cfg);
        assertThat(w.keySet()).containsExactlyElementsOf(Gpt2Names.jtrainNames(cfg));

        try (SafetensorsReader ref = SafetensorsReader.open(resource("tiny_gpt2_reference.safetensors"));
             TokenFile tokens = TokenFile.open(resource("tiny_tokens.bin"))) {
            // eval's windows over the raw .bin are exactly the stored batch
            Batch batch = new ConsecutiveWindows(tokens, 16).first(2);
            int[] x = ref.readInts("x");
            assertThat(batch.x()).containsExactly(x);
            assertThat(batch.y()).containsExactly(ref.readInts("y"));

            // a gradient for every parameter, in jtrain naming and layout
            for (String name : Gpt2Names.jtrainNames(cfg))
                assertThat(ref.info("grad." + name).shape()).as(name).containsExactly(Gpt2Names.jtrainShape(name, cfg));
            assertThat(ref.info("logits").shape()).containsExactly(2, 16, 64);
            assertThat(ref.readFloats("loss")[0]).isCloseTo(Float.parseFloat(ref.metadata().get("loss_fp64")), within(1e-6f));

            float[] wte = w.get("transformer.wte.weight"), wpe = w.get("transformer.wpe.weight");
            float[] emb = ref.readFloats("act.emb");
            for (int i = 0; i < 32; i++)
                for (int c = 0; c < 32; c++)
                    assertThat(emb[i * 32 + c]).isCloseTo(wte[x[i] * 32 + c] + wpe[(i % 16) * 32 + c], within(1e-6f));
        }
    }
}
