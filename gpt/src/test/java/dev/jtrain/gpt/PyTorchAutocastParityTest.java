package dev.jtrain.gpt;

import dev.jtrain.autograd.Autocast;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.kernel.Bf16Gemm;
import org.junit.jupiter.api.Test;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * bf16 parity with PyTorch's autocast: {@code parity/make_autocast_reference.py} ran the parity model of
 * {@link PyTorchParityTest} under {@code torch.autocast("cpu", bfloat16)}. jtrain under {@link Autocast#bf16()} rounds
 * the same matmul operands to bf16 but, unlike autocast, keeps each matmul's output in fp32 (autocast rounds it to
 * bf16 too), so the two differ by a few bf16 roundings: stated tolerances are 0.03 absolute on logits (values O(1),
 * bf16 spacing near 1 is 2^-7 = 0.008), 0.005 on the loss, and 3% of each gradient tensor's largest magnitude.
 * jtrain must also sit at least as close to the exact (float64) answer as autocast does, and measurably away from
 * its own fp32 result (or bf16 was not used).
 */
class PyTorchAutocastParityTest {
    private static Path resource(String name) throws URISyntaxException {
        return Path.of(PyTorchAutocastParityTest.class.getResource("/parity/" + name).toURI());
    }

    private static double maxDiff(float[] a, float[] b) {
        double d = 0;
        for (int i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
        return d;
    }

    @Test
    void bf16LogitsLossAndGradientsMatchPyTorchAutocast() throws Exception {
        System.out.println(Bf16Gemm.backend());
        Gpt model = GptWeights.loadHuggingFace(resource("tiny_gpt2.safetensors"), 0f, 0);
        try (SafetensorsReader auto = SafetensorsReader.open(resource("tiny_gpt2_autocast_reference.safetensors"));
             SafetensorsReader exact = SafetensorsReader.open(resource("tiny_gpt2_reference.safetensors"))) {
            int[] x = exact.readInts("x"), y = exact.readInts("y");
            float[] fp32 = model.forward(x, 2, 16).toArray();
            Tensor loss;
            float[] logits;
            try (var cast = Autocast.bf16()) {
                logits = model.forward(x, 2, 16).toArray();
                loss = model.loss(x, y, 2, 16);
            }
            loss.backward();
            float[] want = auto.readFloats("logits"), truth = exact.readFloats("logits");
            double vsAutocast = maxDiff(logits, want), autocastError = maxDiff(want, truth), ourError = maxDiff(logits, truth);
            System.out.printf("logits: |jtrain - autocast| %.4f, |autocast - exact| %.4f, |jtrain - exact| %.4f, |jtrain bf16 - fp32| %.4f%n",
                    vsAutocast, autocastError, ourError, maxDiff(logits, fp32));
            assertThat(vsAutocast).as("logits against autocast").isLessThan(0.03);
            assertThat(ourError).as("no further from the exact logits than autocast").isLessThanOrEqualTo(autocastError);
            assertThat(maxDiff(logits, fp32)).as("bf16 was used (the fp32 logits differ)").isGreaterThan(1e-4);
            assertThat((double) Math.abs(loss.item() - auto.readFloats("loss")[0])).as("loss").isLessThan(0.005);

            double worst = 0;
            for (Map.Entry<String, Tensor> e : model.namedParameters().entrySet()) {
                float[] g = e.getValue().grad().toArray(), r = auto.readFloats("grad." + e.getKey());
                double scale = 0;
                for (float v : r) scale = Math.max(scale, Math.abs(v));
                double rel = maxDiff(g, r) / Math.max(scale, 1e-6);
                worst = Math.max(worst, rel);
                assertThat(rel).as("gradient of %s, relative to its largest", e.getKey()).isLessThan(0.03);
            }
            System.out.printf("gradients: worst |jtrain - autocast| / max|autocast| = %.4f%n", worst);
        }
    }
}
