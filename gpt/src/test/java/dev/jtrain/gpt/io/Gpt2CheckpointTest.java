package dev.jtrain.gpt.io;

import dev.jtrain.gpt.GptConfig;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.io.SafetensorsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class Gpt2CheckpointTest {
    private static final GptConfig CFG = new GptConfig(2, 2, 8, 6, 11, 0f, true);

    @TempDir
    Path dir;

    /** An HF-layout file with random values; returns the HF-layout arrays by HF name. */
    private static Map<String, float[]> writeHf(Path file, String prefix, boolean withBuffers, long seed) {
        Random rnd = new Random(seed);
        var w = new SafetensorsWriter();
        var out = new java.util.LinkedHashMap<String, float[]>();
        for (String j : Gpt2Names.jtrainNames(CFG)) {
            String hf = Gpt2Names.toHf(j);
            long[] shape = Gpt2Names.hfShape(hf, CFG);
            int n = 1;
            for (long d : shape) n *= (int) d;
            float[] data = new float[n];
            for (int i = 0; i < n; i++) data[i] = (float) rnd.nextGaussian();
            w.put(prefix + hf, shape, data);
            out.put(hf, data);
        }
        if (withBuffers) {
            w.put(prefix + "h.0.attn.bias", new long[]{1, 1, 6, 6}, new float[36]);
            w.put(prefix + "h.1.attn.masked_bias", new long[]{}, new float[]{-1e4f});
            w.put("lm_head.weight", new long[]{11, 8}, out.get("wte.weight"));
        }
        w.write(file);
        return out;
    }

    @Test
    void conv1dWeightsArriveTransposedAndEverythingElseVerbatim() {
        long seed = 7;
        System.out.println("seed=" + seed);
        Path f = dir.resolve("model.safetensors");
        Map<String, float[]> hf = writeHf(f, "transformer.", true, seed);
        Map<String, float[]> j = Gpt2Checkpoint.load(f, CFG);
        assertThat(j.keySet()).containsExactlyElementsOf(Gpt2Names.jtrainNames(CFG));
        // c_attn: HF (C=8, 3C=24) -> jtrain (24, 8): jtrain[o][i] == hf[i][o]
        float[] a = hf.get("h.1.attn.c_attn.weight");
        float[] b = j.get("transformer.h.1.attn.c_attn.weight");
        for (int o = 0; o < 24; o++)
            for (int i = 0; i < 8; i++) assertThat(b[o * 8 + i]).isEqualTo(a[i * 24 + o]);
        float[] p = hf.get("h.0.mlp.c_proj.weight");            // HF (4C=32, C=8) -> jtrain (8, 32)
        float[] q = j.get("transformer.h.0.mlp.c_proj.weight");
        for (int o = 0; o < 8; o++)
            for (int i = 0; i < 32; i++) assertThat(q[o * 32 + i]).isEqualTo(p[i * 8 + o]);
        assertThat(j.get("transformer.wte.weight")).containsExactly(hf.get("wte.weight"));
        assertThat(j.get("transformer.h.1.attn.c_attn.bias")).containsExactly(hf.get("h.1.attn.c_attn.bias"));
    }

    @Test
    void savedFileIsTheHfLayoutAgain() {
        Path in = dir.resolve("in.safetensors");
        Map<String, float[]> hf = writeHf(in, "", false, 11);
        Path out = dir.resolve("out.safetensors");
        Gpt2Checkpoint.save(out, CFG, Gpt2Checkpoint.load(in, CFG));
        try (SafetensorsReader r = SafetensorsReader.open(out)) {
            assertThat(r.names()).hasSize(hf.size());
            assertThat(r.metadata()).containsEntry("format", "pt");
            for (var e : hf.entrySet()) {
                assertThat(r.info(e.getKey()).shape()).containsExactly(Gpt2Names.hfShape(e.getKey(), CFG));
                assertThat(r.readFloats(e.getKey())).as(e.getKey()).containsExactly(e.getValue());
            }
        }
    }

    @Test
    void missingUnknownAndMisshapenTensorsAreReported() {
        Path f = dir.resolve("short.safetensors");
        new SafetensorsWriter().put("wte.weight", new long[]{11, 8}, new float[88]).write(f);
        assertThatThrownBy(() -> Gpt2Checkpoint.load(f, CFG)).hasMessageContaining("missing").hasMessageContaining("transformer.wpe.weight");

        Path g = dir.resolve("deep.safetensors");
        writeHf(g, "", false, 1);
        GptConfig shallow = new GptConfig(1, 2, 8, 6, 11, 0f, true);
        assertThatThrownBy(() -> Gpt2Checkpoint.load(g, shallow)).hasMessageContaining("tensor=h.1.").hasMessageContaining("nLayer=1");
        GptConfig wider = new GptConfig(2, 2, 8, 6, 12, 0f, true);
        assertThatThrownBy(() -> Gpt2Checkpoint.load(g, wider)).hasMessageContaining("tensor=wte.weight")
                .hasMessageContaining("stored=[11, 8], expected=[12, 8]");

        Path h = dir.resolve("odd.safetensors");
        new SafetensorsWriter().put("score.weight", new long[]{1}, new float[1]).write(h);
        assertThatThrownBy(() -> Gpt2Checkpoint.load(h, CFG)).hasMessageContaining("unexpected tensor").hasMessageContaining("score.weight");
    }

    @Test
    void storedLmHeadMustEqualWte() {
        Path tied = dir.resolve("tied.safetensors");
        writeHf(tied, "transformer.", true, 3);          // lm_head.weight = wte
        assertThat(Gpt2Checkpoint.load(tied, CFG)).hasSize(Gpt2Names.jtrainNames(CFG).size());

        Path untied = dir.resolve("untied.safetensors");
        Random rnd = new Random(5);
        var w = new SafetensorsWriter();
        for (String j : Gpt2Names.jtrainNames(CFG)) {
            String hf = Gpt2Names.toHf(j);
            long[] shape = Gpt2Names.hfShape(hf, CFG);
            float[] data = new float[(int) java.util.Arrays.stream(shape).reduce(1, (a, b) -> a * b)];
            for (int i = 0; i < data.length; i++) data[i] = rnd.nextFloat();
            w.put(hf, shape, data);
        }
        w.put("lm_head.weight", new long[]{11, 8}, new float[88]).write(untied);
        assertThatThrownBy(() -> Gpt2Checkpoint.load(untied, CFG)).hasMessageContaining("lm_head.weight differs from wte.weight");
    }

    @Test
    void transposeHandlesOddShapes() {
        for (int[] rc : new int[][]{{1, 1}, {1, 7}, {7, 1}, {33, 65}, {64, 31}}) {
            int rows = rc[0], cols = rc[1];
            float[] src = new float[rows * cols];
            for (int i = 0; i < src.length; i++) src[i] = i;
            float[] t = Transpose.transpose(src, rows, cols);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) assertThat(t[c * rows + r]).isEqualTo(src[r * cols + c]);
            assertThat(Transpose.transpose(t, cols, rows)).containsExactly(src);
        }
    }
}
