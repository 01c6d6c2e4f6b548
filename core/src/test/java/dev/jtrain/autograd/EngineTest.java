package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class EngineTest {
    private final Rng rng = new Rng(7);

    @Test
    void gradientsAccumulateAcrossBackwardCalls() {
        Tensor x = Tensor.of(new float[]{1, 2, 3}, 3).requiresGrad(true);
        x.mul(x).sum().backward();
        x.mul(x).sum().backward();
        assertThat(x.grad().toArray()).containsExactly(4, 8, 12);
    }

    @Test
    void leafUsedTwiceGetsSummedGradientAndHookFiresOnce() {
        Tensor w = Tensor.randn(rng, 1f, 4, 4).requiresGrad(true);
        List<String> fired = new ArrayList<>();
        w.registerPostAccumulateGradHook(t -> fired.add("w"));
        Tensor x = Tensor.randn(rng, 1f, 2, 4);
        F.linear(F.linear(x, w, null), w, null).sum().backward();
        assertThat(fired).containsExactly("w");
        // The same graph with the two uses as separate leaves: w's gradient must be the sum of theirs.
        Tensor w1 = Tensor.of(w.toArray(), 4, 4).requiresGrad(true), w2 = Tensor.of(w.toArray(), 4, 4).requiresGrad(true);
        F.linear(F.linear(x, w1, null), w2, null).sum().backward();
        float[] g1 = w1.grad().toArray(), g2 = w2.grad().toArray(), g = w.grad().toArray();
        assertThat(g1).isNotEqualTo(g2); // the two uses contribute different gradients, so a dropped one shows
        for (int i = 0; i < g.length; i++) assertThat(g[i]).as("dL/dw[%d]", i).isCloseTo(g1[i] + g2[i], within(1e-5f));
    }

    /**
     * A leaf that already has a gradient (a view into a flat buffer, as every strategy gives them) takes each
     * contribution as it arrives instead of the engine holding and summing them: the same value, the hook once, and
     * one weight-sized array less out at once in the step arena than a leaf without a gradient, whose contributions
     * the engine sums first.
     */
    @Test
    void aLeafWithAGradientTakesContributionsAsTheyArrive() {
        int n = 64;
        Tensor x = Tensor.randn(rng, 1f, 2, n);
        Tensor w = Tensor.randn(rng, 0.1f, n, n).requiresGrad(true);
        float[] buf = new float[n * n];
        long[] peak = new long[2];
        float[][] grads = new float[2][];
        for (int withGrad = 0; withGrad < 2; withGrad++) {
            w.setGrad(withGrad == 1 ? Tensor.view(buf, 0, n, n) : null);
            List<String> fired = new ArrayList<>();
            w.registerPostAccumulateGradHook(t -> fired.add("w"));
            StepArena arena = new StepArena();
            try (var scope = arena.open()) {
                F.linear(F.linear(x, w, null), w, null).sum().backward();
            }
            peak[withGrad] = arena.peakLentBytes();
            grads[withGrad] = w.grad().toArray();
            assertThat(fired).containsExactly("w");
            w.postAccumulateGradHooks().clear();
        }
        assertThat(grads[1]).as("same sum, same order").containsExactly(grads[0]);
        assertThat(w.grad().data()).as("into the leaf's own buffer").isSameAs(buf);
        assertThat(peak[0] - peak[1]).as("bytes out at once saved").isGreaterThanOrEqualTo((long) n * n * Float.BYTES);
    }

    @Test
    void noGradRecordsNothing() {
        Tensor x = Tensor.randn(rng, 1f, 3).requiresGrad(true);
        Tensor y;
        try (var g = GradMode.noGrad()) {
            y = x.mul(x).sum();
        }
        assertThat(y.gradFn()).isNull();
        assertThatThrownBy(y::backward).isInstanceOf(IllegalStateException.class).hasMessageContaining("does not require grad");
    }

    @Test
    void deepGraphDoesNotOverflowTheStack() {
        Tensor x = Tensor.of(new float[]{1f}, 1).requiresGrad(true);
        Tensor y = x;
        for (int i = 0; i < 50_000; i++) y = y.mul(1.0f).add(Tensor.scalar(0f));
        y.sum().backward();
        assertThat(x.grad().item()).isEqualTo(1f);
    }

    /**
     * The hooks of a stack of layers fire last layer first, and the last layer's hook fires before the backward
     * of the earlier layers has run: what lets DDP start all-reducing while backward continues.
     */
    @Test
    void postAccumulateGradHooksFireInReverseLayerOrderBeforeEarlierBackward() {
        int layers = 4;
        List<Tensor> weights = new ArrayList<>();
        List<String> events = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            Tensor w = Tensor.randn(rng, 0.5f, 8, 8).requiresGrad(true).setName("w" + l);
            final int id = l;
            w.registerPostAccumulateGradHook(t -> events.add("hook" + id));
            weights.add(w);
        }
        Tensor x = Tensor.randn(rng, 1f, 3, 8);
        for (int l = 0; l < layers; l++) {
            final int id = l;
            x = F.linear(x, weights.get(l), null);
            x = tracing(x, "backward" + id, events);
        }
        x.sum().backward();
        assertThat(events).containsExactly("backward3", "hook3", "backward2", "hook2", "backward1", "hook1", "backward0", "hook0");
    }

    /** Identity op that logs when its backward runs. */
    private static Tensor tracing(Tensor x, String label, List<String> events) {
        Tensor out = x.detach();
        out.setGradFn(new Node(x) {
            @Override
            protected Tensor[] apply(Tensor g) {
                events.add(label);
                return new Tensor[]{g};
            }
        });
        return out;
    }

    @Test
    void checkpointedBlockGivesSameGradientsAndSavesMemory() {
        Rng init = new Rng(3);
        Tensor w1 = Tensor.randn(init, 0.3f, 16, 16).requiresGrad(true);
        Tensor w2 = Tensor.randn(init, 0.3f, 16, 16).requiresGrad(true);
        Tensor x = Tensor.randn(init, 1f, 4, 16).requiresGrad(true);
        java.util.function.UnaryOperator<Tensor> block = t -> F.dropout(F.gelu(F.linear(F.gelu(F.linear(t, w1, null)), w2, null)), 0.2f, dropRng);

        dropRng.setState(11);
        SavedMemory.resetPeak();
        long before = SavedMemory.liveBytes();
        Tensor y = block.apply(x);
        long plainSaved = SavedMemory.liveBytes() - before;
        y.sum().backward();
        float[] gx = x.grad().toArray(), g1 = w1.grad().toArray(), g2 = w2.grad().toArray();
        x.setGrad(null);
        w1.setGrad(null);
        w2.setGrad(null);

        dropRng.setState(11);
        before = SavedMemory.liveBytes();
        Tensor yc = Checkpoint.apply(block, x, dropRng);
        long ckptSaved = SavedMemory.liveBytes() - before;
        assertThat(yc.toArray()).containsExactly(y.toArray());
        yc.sum().backward();
        assertThat(x.grad().toArray()).containsExactly(gx);
        assertThat(w1.grad().toArray()).containsExactly(g1);
        assertThat(w2.grad().toArray()).containsExactly(g2);
        assertThat(ckptSaved).isLessThan(plainSaved / 3);
        assertThat(SavedMemory.liveBytes()).isCloseTo(0L, within(0L));
    }

    private final Rng dropRng = new Rng(0);
}
