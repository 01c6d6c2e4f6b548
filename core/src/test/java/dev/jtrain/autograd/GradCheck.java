package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Finite-difference gradient check. The scalar objective is L = Σ out ⊙ R with a fixed random R (so every
 * output element matters). Central differences in fp32 with step h = 1e-2·max(1,|x|) have error O(h²·f''') plus
 * fp32 rounding O(ε·|L|/h); tolerance: |numeric − analytic| ≤ 2e-2·max(1, |analytic|) per element, which both
 * terms stay well inside for these smooth ops, while a wrong gradient (sign, factor, index) misses it by far.
 */
final class GradCheck {
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
                float orig = data[idx];
                float h = 1e-2f * Math.max(1f, Math.abs(orig));
                double lp, lm;
                try (var g = GradMode.noGrad()) {
                    data[idx] = orig + h;
                    lp = objective(f, inputs, r);
                    data[idx] = orig - h;
                    lm = objective(f, inputs, r);
                }
                data[idx] = orig;
                double numeric = (lp - lm) / (2 * h);
                assertThat(Math.abs(numeric - analytic[j]))
                        .as("input %d element %d: numeric %s vs analytic %s", i, j, numeric, analytic[j])
                        .isLessThanOrEqualTo(2e-2 * Math.max(1.0, Math.abs(analytic[j])));
            }
        }
    }

    private static double objective(Function<Tensor[], Tensor> f, Tensor[] inputs, Tensor r) {
        Tensor out = f.apply(inputs);
        float[] o = out.toArray(), w = r.toArray();
        double s = 0;
        for (int k = 0; k < o.length; k++) s += (double) o[k] * w[k];
        return s;
    }
}
