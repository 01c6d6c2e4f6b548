package dev.jtrain.gpt;

import dev.jtrain.tensor.Rng;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** Temperature and top-k sampling draw from the distribution they claim to. */
class SamplerTest {
    static final float[] LOGITS = {0.5f, 2.0f, -1.0f, 1.0f, 0.0f};
    static final int DRAWS = 200_000;

    private static double[] frequencies(float temperature, int topK, long seed) {
        Rng rng = new Rng(seed);
        double[] f = new double[LOGITS.length];
        for (int i = 0; i < DRAWS; i++) f[Sampler.sample(LOGITS, temperature, topK, rng)]++;
        for (int i = 0; i < f.length; i++) f[i] /= DRAWS;
        return f;
    }

    /** softmax(logits / temperature) restricted to the k largest logits (k ≤ 0: all), renormalised. */
    private static double[] expected(float temperature, int topK) {
        Integer[] order = {0, 1, 2, 3, 4};
        java.util.Arrays.sort(order, (a, b) -> Float.compare(LOGITS[b], LOGITS[a]));
        int keep = topK > 0 ? topK : LOGITS.length;
        double[] p = new double[LOGITS.length];
        double sum = 0;
        for (int r = 0; r < keep; r++) sum += p[order[r]] = Math.exp(LOGITS[order[r]] / temperature);
        for (int i = 0; i < p.length; i++) p[i] /= sum;
        return p;
    }

    /** Three standard deviations of a frequency estimated from {@link #DRAWS} draws, at worst p = ½. */
    private static final double TOL = 3 * Math.sqrt(0.25 / DRAWS);

    @Test
    void temperatureZeroIsGreedy() {
        Rng rng = new Rng(1);
        for (int i = 0; i < 100; i++) assertThat(Sampler.sample(LOGITS, 0f, 0, rng)).isEqualTo(1);
    }

    @Test
    void fullDistributionAtTemperatureOneIsTheSoftmax() {
        double[] got = frequencies(1f, 0, 7), want = expected(1f, 0);
        for (int i = 0; i < want.length; i++) assertThat(got[i]).as("token %d", i).isCloseTo(want[i], within(TOL));
    }

    @Test
    void temperatureSharpensAndFlattens() {
        double[] cold = frequencies(0.5f, 0, 8), hot = frequencies(2f, 0, 9);
        double[] wantCold = expected(0.5f, 0), wantHot = expected(2f, 0);
        for (int i = 0; i < LOGITS.length; i++) {
            assertThat(cold[i]).as("T=0.5 token %d", i).isCloseTo(wantCold[i], within(TOL));
            assertThat(hot[i]).as("T=2 token %d", i).isCloseTo(wantHot[i], within(TOL));
        }
        assertThat(cold[1]).isGreaterThan(hot[1]);
    }

    @Test
    void topKNeverDrawsOutsideTheKLargestAndRenormalises() {
        double[] got = frequencies(1f, 2, 10), want = expected(1f, 2);
        assertThat(got[0]).isZero();
        assertThat(got[2]).isZero();
        assertThat(got[4]).isZero();
        assertThat(got[1]).isCloseTo(want[1], within(TOL));
        assertThat(got[3]).isCloseTo(want[3], within(TOL));
        Rng rng = new Rng(11);
        for (int i = 0; i < 1000; i++) assertThat(Sampler.sample(LOGITS, 1.5f, 1, rng)).as("top-1 is greedy").isEqualTo(1);
    }
}
