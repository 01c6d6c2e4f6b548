package dev.jtrain.gpt;

/**
 * Hyper-parameters of a GPT-2 / nanoGPT model.
 *
 * @param nLayer    transformer blocks
 * @param nHead     attention heads (nEmbd must divide by it)
 * @param nEmbd     model width C
 * @param blockSize maximum context length T
 * @param vocabSize tokenizer vocabulary; the embedding is padded to {@link #paddedVocabSize()}
 * @param dropout   dropout probability for attention/residual/embedding dropout
 * @param bias      whether Linear and LayerNorm layers have biases (GPT-2: true)
 */
public record GptConfig(int nLayer, int nHead, int nEmbd, int blockSize, int vocabSize, float dropout, boolean bias) {
    /** Padding the vocabulary to a multiple of 64 keeps the lm_head GEMM on whole kernel tiles (nanoGPT's 50257 -> 50304). */
    public static final int VOCAB_MULTIPLE = 64;

    public GptConfig {
        if (nLayer < 1 || nHead < 1 || nEmbd < 1 || blockSize < 1 || vocabSize < 1)
            throw new IllegalArgumentException("GptConfig sizes must be positive: nLayer=" + nLayer + ", nHead=" + nHead
                    + ", nEmbd=" + nEmbd + ", blockSize=" + blockSize + ", vocabSize=" + vocabSize);
        if (nEmbd % nHead != 0)
            throw new IllegalArgumentException("nEmbd must be divisible by nHead: nEmbd=" + nEmbd + ", nHead=" + nHead);
        if (dropout < 0f || dropout >= 1f)
            throw new IllegalArgumentException("dropout must be in [0, 1): dropout=" + dropout);
    }

    public int paddedVocabSize() {
        return (vocabSize + VOCAB_MULTIPLE - 1) / VOCAB_MULTIPLE * VOCAB_MULTIPLE;
    }

    public int headSize() {
        return nEmbd / nHead;
    }
}
