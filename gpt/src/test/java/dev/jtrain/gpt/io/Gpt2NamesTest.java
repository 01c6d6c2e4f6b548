package dev.jtrain.gpt.io;

import dev.jtrain.gpt.GptConfig;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class Gpt2NamesTest {
    private static final GptConfig GPT2 = new GptConfig(12, 12, 768, 1024, 50257, 0f, true);

    @Test
    void hfNamesMapToNanoGptNamesWithOrWithoutPrefix() {
        assertThat(Gpt2Names.toJtrain("wte.weight")).contains("transformer.wte.weight");
        assertThat(Gpt2Names.toJtrain("transformer.wpe.weight")).contains("transformer.wpe.weight");
        assertThat(Gpt2Names.toJtrain("h.11.mlp.c_proj.bias")).contains("transformer.h.11.mlp.c_proj.bias");
        assertThat(Gpt2Names.toJtrain("transformer.h.0.attn.c_attn.weight")).contains("transformer.h.0.attn.c_attn.weight");
        assertThat(Gpt2Names.toJtrain("ln_f.bias")).contains("transformer.ln_f.bias");
    }

    @Test
    void maskBuffersAndTiedHeadAreSkipped() {
        assertThat(Gpt2Names.toJtrain("h.3.attn.bias")).isEmpty();
        assertThat(Gpt2Names.toJtrain("transformer.h.3.attn.masked_bias")).isEmpty();
        assertThat(Gpt2Names.isIgnoredBuffer("h.3.attn.bias")).isTrue();
        assertThat(Gpt2Names.isIgnoredBuffer("h.3.attn.c_attn.bias")).isFalse();
        assertThat(Gpt2Names.toJtrain("lm_head.weight")).isEmpty();
        assertThat(Gpt2Names.isTiedLmHead("lm_head.weight")).isTrue();
    }

    @Test
    void unknownNamesAreRejected() {
        assertThatThrownBy(() -> Gpt2Names.toJtrain("h.0.attn.q_proj.weight"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name=h.0.attn.q_proj.weight");
        assertThatThrownBy(() -> Gpt2Names.toJtrain("model.embed_tokens.weight")).hasMessageContaining("not a GPT-2 tensor name");
        assertThatThrownBy(() -> Gpt2Names.toHf("wte.weight")).hasMessageContaining("expected prefix");
    }

    @Test
    void exactlyTheFourConv1DWeightsAreTransposed() {
        assertThat(Gpt2Names.needsTranspose("h.0.attn.c_attn.weight")).isTrue();
        assertThat(Gpt2Names.needsTranspose("transformer.h.0.attn.c_proj.weight")).isTrue();
        assertThat(Gpt2Names.needsTranspose("h.5.mlp.c_fc.weight")).isTrue();
        assertThat(Gpt2Names.needsTranspose("h.5.mlp.c_proj.weight")).isTrue();
        assertThat(Gpt2Names.needsTranspose("h.5.mlp.c_proj.bias")).isFalse();
        assertThat(Gpt2Names.needsTranspose("wte.weight")).isFalse();
        assertThat(Gpt2Names.needsTranspose("h.0.ln_1.weight")).isFalse();
    }

    @Test
    void shapesFollowTheLayoutOfEachSide() {
        assertThat(Gpt2Names.hfShape("h.0.attn.c_attn.weight", GPT2)).containsExactly(768, 2304);
        assertThat(Gpt2Names.jtrainShape("transformer.h.0.attn.c_attn.weight", GPT2)).containsExactly(2304, 768);
        assertThat(Gpt2Names.hfShape("h.0.mlp.c_fc.weight", GPT2)).containsExactly(768, 3072);
        assertThat(Gpt2Names.jtrainShape("transformer.h.0.mlp.c_proj.weight", GPT2)).containsExactly(768, 3072);
        assertThat(Gpt2Names.hfShape("h.0.mlp.c_proj.weight", GPT2)).containsExactly(3072, 768);
        assertThat(Gpt2Names.hfShape("wte.weight", GPT2)).containsExactly(50257, 768);
        assertThat(Gpt2Names.hfShape("wpe.weight", GPT2)).containsExactly(1024, 768);
        assertThatThrownBy(() -> Gpt2Names.jtrainShape("transformer.h.12.ln_1.weight", GPT2)).hasMessageContaining("nLayer=12");
    }

    @Test
    void namesRoundTripAndCountMatchesGpt2Small() {
        var names = Gpt2Names.jtrainNames(GPT2);
        assertThat(names).hasSize(2 + 12 * 12 + 2).startsWith("transformer.wte.weight", "transformer.wpe.weight")
                .endsWith("transformer.ln_f.weight", "transformer.ln_f.bias");
        long params = 0;
        for (String n : names) {
            assertThat(Gpt2Names.toJtrain(Gpt2Names.toHf(n))).contains(n);
            long p = 1;
            for (long d : Gpt2Names.jtrainShape(n, GPT2)) p *= d;
            params += p;
        }
        assertThat(params).isEqualTo(124_439_808L);  // GPT-2 small, tied lm_head counted once
        assertThat(Gpt2Names.jtrainNames(new GptConfig(1, 1, 8, 8, 10, 0f, false)))
                .noneMatch(n -> n.endsWith(".bias")).hasSize(2 + 6 + 1);   // wte, wpe, 6 weights per block, ln_f
    }
}
