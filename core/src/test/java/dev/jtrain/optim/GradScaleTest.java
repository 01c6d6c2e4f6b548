package dev.jtrain.optim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.jtrain.tensor.kernel.VectorOps;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Clipping's coefficient handed to the optimizer ({@link Optimizer#step(float[], int, float[], int, float[][], int,
 * int, float, boolean, int, float)}) gives the bits that scaling the gradients first gave: AdamW multiplies each
 * gradient as it reads it (one rounding, the same as the scaling pass) and leaves the buffer alone; an optimizer that
 * does not fold it gets its gradients scaled in place by the interface's default.
 */
class GradScaleTest {
    private static float[] randn(SplittableRandom r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = (float) (r.nextDouble() * 2 - 1) * 3f;
        return a;
    }

    /** Lengths on and off a vector boundary (the masked tail), offsets inside the buffers, two steps. */
    @ParameterizedTest
    @ValueSource(ints = {1, 7, 64, 1000, 1003})
    void adamWFoldsTheCoefficientIntoItsReadOfEachGradient(int n) {
        SplittableRandom r = new SplittableRandom(46 + n);
        // a large eps: Adam's update is nearly invariant to the gradients' scale, and eps is where the scale shows
        AdamW adamW = new AdamW(0.9f, 0.95f, 0.1f, 0.1f);
        float scale = GradClip.coefficient(7.3f, 1f);
        assertThat(scale).isLessThan(1f);
        int off = 5;
        float[] g = randn(r, n + 2 * off), p0 = randn(r, n + 2 * off);
        float[] pa = p0.clone(), pb = p0.clone();
        float[][] sa = adamW.newState(n + 2 * off), sb = adamW.newState(n + 2 * off);
        float[] g0 = g.clone(), scaled = g.clone();
        VectorOps.scale(scale, scaled, off, scaled, off, n);
        for (int step = 1; step <= 2; step++) {
            adamW.step(pa, off, g, off, sa, off, n, 0.5f, true, step, scale);
            adamW.step(pb, off, scaled, off, sb, off, n, 0.5f, true, step);
        }
        assertThat(pa).as("parameters").containsExactly(pb);
        assertThat(sa[0]).as("exp_avg").containsExactly(sb[0]);
        assertThat(sa[1]).as("exp_avg_sq").containsExactly(sb[1]);
        assertThat(g).as("the gradients are read, not scaled in place").containsExactly(g0);
        assertThat(pa).as("the coefficient changes the update").isNotEqualTo(stepped(adamW, p0, g0, off, n));
    }

    @ParameterizedTest
    @ValueSource(ints = {3, 100})
    void theDefaultScalesTheGradientsOfAnOptimizerThatDoesNotFoldIt(int n) {
        Optimizer sgd = new Optimizer() {
            @Override public List<String> stateNames() { return List.of(); }

            @Override
            public void step(float[] p, int pOff, float[] g, int gOff, float[][] state, int sOff, int k, float lr, boolean decay, int step) {
                for (int i = 0; i < k; i++) p[pOff + i] -= lr * g[gOff + i];
            }
        };
        SplittableRandom r = new SplittableRandom(7 + n);
        float[] p = randn(r, n), g = randn(r, n), expected = p.clone();
        for (int i = 0; i < n; i++) expected[i] -= 0.1f * (0.25f * g[i]);
        sgd.step(p, 0, g, 0, new float[0][], 0, n, 0.1f, false, 1, 0.25f);
        assertThat(p).containsExactly(expected);
    }

    @ParameterizedTest
    @ValueSource(floats = {0f, -1f, 10f})
    void theCoefficientIsOneWithinTheNormOrWithClippingOff(float maxNorm) {
        assertThat(GradClip.coefficient(3f, maxNorm)).isEqualTo(1f);
        assertThat(GradClip.coefficient(20f, 10f)).isEqualTo(10f / (20f + 1e-6f));
    }

    private static float[] stepped(AdamW adamW, float[] p0, float[] g, int off, int n) {
        float[] p = p0.clone();
        float[][] state = adamW.newState(p.length);
        for (int step = 1; step <= 2; step++) adamW.step(p, off, g, off, state, off, n, 0.5f, true, step);
        return p;
    }
}
