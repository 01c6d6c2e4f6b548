package dev.jtrain.autograd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.Precision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A linear layer whose weight already has a gradient adds dW = dyᵀ·x straight into it (GEMM with beta 1) instead of
 * into a new out x in array the engine would add in and drop ({@link Node#leafGradient}).
 */
class InPlaceWeightGradientTest {
    static final int ROWS = 24, IN = 64, OUT = 512;

    @ParameterizedTest
    @EnumSource(Precision.class)
    void theWeightGradientIsAddedIntoTheLeafsOwnArray(Precision precision) {
        Rng rng = new Rng(5);
        Tensor x = Tensor.randn(rng, 1f, ROWS, IN), gy = Tensor.randn(rng, 1f, ROWS, OUT);
        Tensor w = Tensor.randn(rng, 0.5f, OUT, IN).requiresGrad(true);
        float[] before = new float[OUT * IN];
        for (int i = 0; i < before.length; i++) before[i] = 0.25f * (i % 7);
        float[] own = before.clone();
        w.setGrad(Tensor.of(own, OUT, IN));
        try (var cast = Autocast.with(precision)) {
            F.linear(x, w, null).backward(gy);
        }
        assertThat(w.grad().data()).as("the leaf's own array").isSameAs(own);
        float[] dw = new float[OUT * IN];
        precision.gemm(true, false, OUT, IN, ROWS, 1f, gy.data(), 0, OUT, x.data(), 0, IN, 0f, dw, 0, IN);
        for (int i = 0; i < dw.length; i++)
            assertThat(own[i]).as("element %d", i).isCloseTo(before[i] + dw[i], within(1e-5f * (1 + Math.abs(dw[i]))));
    }

    /** Into a zeroed gradient the result is bitwise what the separate array gave, and that array is never lent. */
    @Test
    void intoAZeroGradientItIsBitwiseTheOldResultWithoutTheTemporary() {
        Rng rng = new Rng(6);
        Tensor x = Tensor.randn(rng, 1f, ROWS, IN), gy = Tensor.randn(rng, 1f, ROWS, OUT);
        Tensor w0 = Tensor.randn(rng, 0.5f, OUT, IN);
        Tensor fresh = Tensor.of(w0.toArray(), OUT, IN).requiresGrad(true), inPlace = Tensor.of(w0.toArray(), OUT, IN).requiresGrad(true);
        inPlace.setGrad(Tensor.zeros(OUT, IN));
        long peakFresh = peakLent(x, fresh, gy), peakInPlace = peakLent(x, inPlace, gy);
        assertThat(inPlace.grad().toArray()).containsExactly(fresh.grad().toArray());
        assertThat(peakInPlace).as("peak bytes lent in backward (fresh: %d)", peakFresh)
                .isLessThanOrEqualTo(peakFresh - (long) OUT * IN * Float.BYTES);
    }

    /** An embedding table's rows are scatter-added into its own gradient, a view at an offset included. */
    @Test
    void embeddingRowsAreAddedIntoTheTablesOwnGradient() {
        int vocab = 300, dim = 48;
        int[] ids = {5, 7, 5, 299, 0, 7, 7, 12};
        Rng rng = new Rng(7);
        Tensor table = Tensor.randn(rng, 1f, vocab, dim).requiresGrad(true);
        Tensor gy = Tensor.randn(rng, 1f, ids.length, dim);
        float[] storage = new float[3 + vocab * dim]; // the gradient is a view into a larger buffer, as sharded strategies give
        for (int i = 0; i < storage.length; i++) storage[i] = 0.125f * (i % 5);
        float[] before = storage.clone();
        table.setGrad(Tensor.view(storage, 3, vocab, dim));
        long peak = peakLent(() -> F.embedding(table, ids, ids.length).backward(gy));
        assertThat(table.grad().data()).as("the table's own array").isSameAs(storage);
        float[] expect = before.clone();
        for (int i = 0; i < ids.length; i++)
            for (int c = 0; c < dim; c++) expect[3 + ids[i] * dim + c] += gy.data()[i * dim + c];
        for (int i = 0; i < storage.length; i++) assertThat(storage[i]).as("element %d", i).isCloseTo(expect[i], within(1e-5f));
        assertThat(peak).as("no vocab x width temporary lent in backward").isLessThan((long) vocab * dim * Float.BYTES);
    }

    private static long peakLent(Runnable step) {
        StepArena arena = new StepArena();
        try (var scope = arena.open()) {
            step.run();
        }
        return arena.peakLentBytes();
    }

    private static long peakLent(Tensor x, Tensor w, Tensor gy) {
        StepArena arena = new StepArena();
        try (var scope = arena.open()) {
            F.linear(x, w, null).backward(gy);
        }
        return arena.peakLentBytes();
    }
}
