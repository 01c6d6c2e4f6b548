package dev.jtrain.gpt.io;

import dev.jtrain.gpt.GptConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HfConfigTest {
    /** openai-community/gpt2's config.json, abridged. */
    static final String GPT2_CONFIG = """
            {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
             "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
             "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
             "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
             "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
             "summary_use_proj": true, "vocab_size": 50257}
            """;

    @TempDir
    Path dir;

    @Test
    void readsGpt2SmallConfig() {
        HfConfig c = HfConfig.parse(GPT2_CONFIG, "config.json");
        assertThat(c.config()).isEqualTo(new GptConfig(12, 12, 768, 1024, 50257, 0.1f, true));
        assertThat(c.layerNormEpsilon()).isEqualTo(1e-5);
        assertThat(c.activation()).isEqualTo("gelu_new");
    }

    @Test
    void nCtxIsUsedWhenNPositionsIsAbsent() {
        HfConfig c = HfConfig.parse("{\"n_layer\":2,\"n_head\":2,\"n_embd\":32,\"n_ctx\":16,\"vocab_size\":64}", "x");
        assertThat(c.config().blockSize()).isEqualTo(16);
        assertThat(c.config().dropout()).isZero();
    }

    @Test
    void writtenConfigReadsBack() {
        GptConfig cfg = new GptConfig(2, 2, 32, 16, 64, 0f, true);
        Path f = dir.resolve("config.json");
        HfConfig.write(f, cfg);
        assertThat(HfConfig.read(f).config()).isEqualTo(cfg);
    }

    @Test
    void unsupportedVariantsAndBadFieldsAreNamed() {
        String base = "\"n_layer\":2,\"n_head\":2,\"n_embd\":32,\"n_positions\":16,\"vocab_size\":64";
        assertThatThrownBy(() -> HfConfig.parse("{" + base + ",\"activation_function\":\"relu\"}", "cfg.json"))
                .hasMessageContaining("file=cfg.json").hasMessageContaining("activation_function=relu");
        assertThatThrownBy(() -> HfConfig.parse("{" + base + ",\"layer_norm_epsilon\":1e-6}", "cfg.json"))
                .hasMessageContaining("layer_norm_epsilon=1.0E-6");
        assertThatThrownBy(() -> HfConfig.parse("{" + base + ",\"tie_word_embeddings\":false}", "cfg.json"))
                .hasMessageContaining("tie_word_embeddings=false");
        assertThatThrownBy(() -> HfConfig.parse("{" + base + ",\"scale_attn_by_inverse_layer_idx\":true}", "cfg.json"))
                .hasMessageContaining("scale_attn_by_inverse_layer_idx");
        assertThatThrownBy(() -> HfConfig.parse("{" + base + ",\"model_type\":\"llama\"}", "cfg.json"))
                .hasMessageContaining("model_type=llama");
        assertThatThrownBy(() -> HfConfig.parse("{\"n_layer\":2,\"n_embd\":32,\"n_positions\":16,\"vocab_size\":64}", "cfg.json"))
                .hasMessageContaining("field=n_head");
        assertThatThrownBy(() -> HfConfig.parse("{\"n_layer\":2,\"n_head\":3,\"n_embd\":32,\"n_positions\":16,\"vocab_size\":64}", "cfg.json"))
                .hasMessageContaining("n_embd=32, n_head=3");
        assertThatThrownBy(() -> HfConfig.parse("{\"n_layer\":\"two\"}", "cfg.json")).hasMessageContaining("field=n_layer");
        assertThatThrownBy(() -> HfConfig.parse("{", "cfg.json")).hasMessageContaining("not valid JSON");
        assertThatThrownBy(() -> HfConfig.parse("{" + base + ",\"n_inner\":100}", "cfg.json")).hasMessageContaining("n_inner=100");
        assertThat(HfConfig.parse("{" + base + ",\"n_inner\":128}", "cfg.json").config().nEmbd()).isEqualTo(32);
        assertThat(HfConfig.parse("{" + base + ",\"n_inner\":null}", "cfg.json").config().nEmbd()).isEqualTo(32);
        assertThatThrownBy(() -> HfConfig.read(dir.resolve("none.json"))).hasMessageContaining("none.json");
    }
}
