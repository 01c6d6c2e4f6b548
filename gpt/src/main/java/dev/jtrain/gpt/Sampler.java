package dev.jtrain.gpt;

import dev.jtrain.tensor.Rng;

import java.util.Arrays;

/** Draws a token from logits with temperature and top-k filtering. */
public final class Sampler {
    private Sampler() {}

    public static int sample(float[] logits, float temperature, int topK, Rng rng) {
        int n = logits.length;
        if (temperature <= 0f) {
            int best = 0;
            for (int i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
            return best;
        }
        float cutoff = Float.NEGATIVE_INFINITY;
        if (topK > 0 && topK < n) {
            float[] sorted = logits.clone();
            Arrays.sort(sorted);
            cutoff = sorted[n - topK];
        }
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) max = Math.max(max, l);
        double[] p = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            p[i] = logits[i] < cutoff ? 0 : Math.exp((logits[i] - max) / temperature);
            sum += p[i];
        }
        double u = rng.nextDouble() * sum;
        for (int i = 0; i < n; i++) {
            u -= p[i];
            if (u <= 0 && p[i] > 0) return i;
        }
        for (int i = n - 1; i >= 0; i--) if (p[i] > 0) return i;
        return 0;
    }
}
