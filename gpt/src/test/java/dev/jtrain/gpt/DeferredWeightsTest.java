package dev.jtrain.gpt;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A model built with its weights deferred gets, when they are drawn, exactly the eagerly built model's values. */
class DeferredWeightsTest {
    // odd sizes: each weight matrix leaves Box-Muller's spare value for the next one to use
    private static final GptConfig CFG = new GptConfig(3, 3, 15, 7, 61, 0f, true);

    @Test
    void drawnLaterIntoAFlatBufferTheWeightsAreBitwiseTheEagerOnes() {
        Gpt eager = new Gpt(CFG, 42);
        Gpt later = Gpt.withWeightsDeferred(CFG, 42);
        assertThat(later.weightsDeferred()).isTrue();
        assertThat(eager.weightsDeferred()).isFalse();
        Map<String, Tensor> e = eager.namedParameters(), l = later.namedParameters();
        assertThat(values(l.get("transformer.h.0.mlp.c_fc.weight"))).containsOnly(0f); // nothing drawn yet
        assertThat(values(l.get("transformer.h.0.ln_1.weight"))).containsOnly(1f);      // norms set as usual

        FlatParameters.of(later); // the parameters move into one buffer before the draw, as a strategy does
        later.drawWeights();
        assertThat(later.weightsDeferred()).isFalse();
        assertThat(l.keySet()).containsExactlyElementsOf(e.keySet());
        for (String name : e.keySet())
            assertThat(values(l.get(name))).as(name).containsExactly(values(e.get(name)));

        float[] before = values(l.get("transformer.wte.weight"));
        later.drawWeights(); // once only
        assertThat(values(l.get("transformer.wte.weight"))).containsExactly(before);
    }

    /** The values are GPT-2's initialisation as {@code Tensor.randn} draws it on one generator, tensor after tensor. */
    @Test
    void theDrawsAreTensorRandnOnOneGeneratorInConstructionOrder() {
        Gpt m = new Gpt(CFG, 42);
        Map<String, Tensor> p = m.namedParameters();
        Rng r = new Rng(42);
        int c = CFG.nEmbd();
        float proj = (float) (0.02 / Math.sqrt(2.0 * CFG.nLayer()));
        assertThat(values(p.get("transformer.wte.weight"))).containsExactly(values(Tensor.randn(r, 0.02f, CFG.paddedVocabSize(), c)));
        assertThat(values(p.get("transformer.wpe.weight"))).containsExactly(values(Tensor.randn(r, 0.02f, CFG.blockSize(), c)));
        for (int b = 0; b < CFG.nLayer(); b++) {
            String h = "transformer.h." + b + ".";
            assertThat(values(p.get(h + "attn.c_attn.weight"))).containsExactly(values(Tensor.randn(r, 0.02f, 3 * c, c)));
            assertThat(values(p.get(h + "attn.c_proj.weight"))).containsExactly(values(Tensor.randn(r, proj, c, c)));
            assertThat(values(p.get(h + "mlp.c_fc.weight"))).containsExactly(values(Tensor.randn(r, 0.02f, 4 * c, c)));
            assertThat(values(p.get(h + "mlp.c_proj.weight"))).containsExactly(values(Tensor.randn(r, proj, c, 4 * c)));
        }
    }

    @Test
    void discardedDrawsLeaveWhatWasLoaded() {
        Gpt m = Gpt.withWeightsDeferred(CFG, 7);
        Tensor w = m.namedParameters().get("transformer.h.1.attn.c_proj.weight");
        Arrays.fill(w.data(), w.offset(), w.offset() + w.numel(), 0.5f); // as a checkpoint load would
        m.discardDeferredWeights();
        m.drawWeights();
        assertThat(values(w)).containsOnly(0.5f);
        assertThat(m.weightsDeferred()).isFalse();
    }

    /** Deferred weights can not be trained on by mistake, nor drawn into parameters a sharded strategy took apart. */
    @Test
    void aDeferredModelRefusesToRunAndToDrawIntoShardedParameters() {
        Gpt m = Gpt.withWeightsDeferred(CFG, 3);
        assertThatThrownBy(() -> m.forward(new int[]{1, 2}, 1, 2)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("drawWeights()");
        m.namedParameters().get("transformer.h.2.mlp.c_fc.weight").pointAt(new float[0], 0); // as ZeRO-3 leaves them
        assertThatThrownBy(m::drawWeights).isInstanceOf(IllegalStateException.class).hasMessageContaining("sharded");

        Gpt ok = Gpt.withWeightsDeferred(CFG, 3);
        ok.drawWeights();
        assertThat(ok.forward(new int[]{1, 2}, 1, 2).size(2)).isEqualTo(CFG.paddedVocabSize());
    }

    private static float[] values(Tensor t) {
        return Arrays.copyOfRange(t.data(), t.offset(), t.offset() + t.numel());
    }
}
