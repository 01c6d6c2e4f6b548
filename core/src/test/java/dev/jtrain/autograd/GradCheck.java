package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Finite-difference gradient check. The scalar objective is L = Σ out ⊙ R with a fixed random R (so every
 * output element matters). The numeric derivative is the Richardson extrapolation of two central differences,
 * D = (4·D(h) − D(2h)) / 3 with h = 1e-2·max(1,|x|): its truncation error is O(h⁴·f⁽⁵⁾) instead of the
 * O(h²·f⁽³⁾) of one central difference. What remains is fp32 rounding of the forward, about ε·|ΔL|/h (outputs that
 * do not depend on the perturbed element round identically in both evaluations and cancel).
 *
 * <p>Criterion, per element: |numeric − analytic| ≤ {@link #ATOL} + {@link #RTOL}·|analytic|. Relative, so a small
 * gradient must be right to about 1% as well: a 20% error in a gradient of 0.05 fails, where the former bound of
 * 0.02 absolute let it pass. The absolute floor only covers the rounding noise above.
 */
final class GradCheck {
    static final double RTOL = 1e-2;
    static final double ATOL = 5e-4;

    private GradCheck() {}

    static void check(Function<Tensor[], Tensor> f, Tensor... inputs) {
        for (Tensor t : inputs) t.requiresGrad(true);
        Tensor out = f.apply(inputs);
        Tensor r = Tensor.randn(new Rng(99), 1f, out.shape());
        Tensor loss = out.mul(r).sum();
        loss.backward();
        for (int i = 0; i < inputs.length; i++) {
            Tensor x = inputs[i];
            float[] analytic = x.grad().toArray();
            float[] data = x.data();
            int n = x.numel();
            int stride = Math.max(1, n / 40); // sample at most ~40 entries per input
            for (int j = 0; j < n; j += stride) {
                int idx = x.offset() + j;
                float h = 1e-2f * Math.max(1f, Math.abs(data[idx]));
                double numeric = (4 * centralDifference(f, inputs, r, data, idx, h)
                        - centralDifference(f, inputs, r, data, idx, 2 * h)) / 3;
                assertThat(Math.abs(numeric - analytic[j]))
                        .as("input %d element %d: numeric %s vs analytic %s", i, j, numeric, analytic[j])
                        .isLessThanOrEqualTo(ATOL + RTOL * Math.abs(analytic[j]));
            }
        }
    }

    private static double centralDifference(Function<Tensor[], Tensor> f, Tensor[] inputs, Tensor r, float[] data, int idx, float h) {
        float orig = data[idx];
        float plus = orig + h, minus = orig - h;
        double lp, lm;
        try (var g = GradMode.noGrad()) {
            data[idx] = plus;
            lp = objective(f, inputs, r);
            data[idx] = minus;
            lm = objective(f, inputs, r);
        } finally {
            data[idx] = orig;
        }
        return (lp - lm) / ((double) plus - minus); // the step actually taken, after fp32 rounding of orig ± h
    }

    private static double objective(Function<Tensor[], Tensor> f, Tensor[] inputs, Tensor r) {
        Tensor out = f.apply(inputs);
        float[] o = out.toArray(), w = r.toArray();
        double s = 0;
        for (int k = 0; k < o.length; k++) s += (double) o[k] * w[k];
        return s;
    }
}
