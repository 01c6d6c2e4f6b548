package dev.jtrain.autograd;

import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** Every differentiable op's backward against finite differences (see {@link GradCheck} for the tolerance). */
class OpGradientTest {
    private final Rng rng = new Rng(1234);

    private Tensor randn(int... shape) {
        return Tensor.randn(rng, 1f, shape);
    }

    @Test
    void addSubMulDivWithBroadcasting() {
        GradCheck.check(in -> F.add(in[0], in[1]), randn(3, 4, 5), randn(4, 5));
        GradCheck.check(in -> F.sub(in[0], in[1]), randn(3, 1, 5), randn(4, 1));
        GradCheck.check(in -> F.mul(in[0], in[1]), randn(2, 7), randn(7));
        GradCheck.check(in -> F.div(in[0], in[1]), randn(3, 5), Tensor.rand(rng, 1f, 2f, 3, 1));
    }

    @Test
    void unaryAndReductions() {
        GradCheck.check(in -> F.tanh(in[0]), randn(4, 6));
        GradCheck.check(in -> F.exp(in[0]), randn(9));
        GradCheck.check(in -> F.log(in[0]), Tensor.rand(rng, 0.5f, 2f, 9));
        GradCheck.check(in -> F.scale(F.sum(in[0]), 0.5f), randn(3, 3));
        GradCheck.check(in -> F.mean(in[0]), randn(5, 2));
        GradCheck.check(in -> F.gelu(in[0]), randn(3, 65));
        GradCheck.check(in -> F.softmax(in[0]), randn(4, 7));
    }

    @Test
    void matmulLinearAndViews() {
        GradCheck.check(in -> F.matmul(in[0], in[1]), randn(5, 7), randn(7, 3));
        GradCheck.check(in -> F.matmul(in[0], in[1]), randn(2, 4, 6), randn(2, 6, 3));
        GradCheck.check(in -> F.matmul(in[0].transpose(0, 1), in[1]), randn(7, 5), randn(7, 3));
        GradCheck.check(in -> F.matmul(in[0], in[1]), randn(2, 3, 6), randn(6, 4));
        GradCheck.check(in -> F.linear(in[0], in[1], in[2]), randn(2, 3, 6), randn(5, 6), randn(5));
        GradCheck.check(in -> in[0].reshape(6, 4).narrow(0, 1, 3).transpose(0, 1).contiguous(), randn(2, 3, 4));
    }

    @Test
    void layerNormEmbeddingCrossEntropy() {
        GradCheck.check(in -> F.layerNorm(in[0], in[1], in[2], 1e-5f), randn(4, 33), randn(33), randn(33));
        int[] ids = {3, 1, 3, 0, 4, 4};
        GradCheck.check(in -> F.embedding(in[0], ids, 2, 3), randn(5, 8));
        int[] targets = {2, 0, -1, 6, 1};
        GradCheck.check(in -> F.crossEntropy(in[0], targets), randn(5, 7));
        int[] inVocab = {2, 0, -1, 4, 1};
        GradCheck.check(in -> F.crossEntropy(in[0], inVocab, 5), randn(5, 7)); // 2 padding columns
    }

    @Test
    void causalSelfAttention() {
        GradCheck.check(in -> F.causalSelfAttention(in[0], 2, 0f, null), randn(2, 5, 3 * 8));
        GradCheck.check(in -> F.causalSelfAttention(in[0], 3, 0f, null), randn(1, 7, 3 * 9));
    }

    @Test
    void dropoutReplaysItsMask() {
        long state = 77;
        GradCheck.check(in -> F.dropout(in[0], 0.3f, new Rng(state)), randn(50));
    }
}
