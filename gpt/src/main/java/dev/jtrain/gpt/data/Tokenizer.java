package dev.jtrain.gpt.data;

/**
 * Maps text to token ids and back. Implementations are immutable and safe to share between threads.
 */
public interface Tokenizer {
    /** Short name used in configs, cache keys and {@link Tokenizers#byName}: "byte" or "gpt2". */
    String name();

    /** Number of distinct token ids, {@code [0, vocabSize)} (before any padding the model applies). */
    int vocabSize();

    /** Token ids of {@code text}. Special-token strings in the text (e.g. "<|endoftext|>") are encoded as ordinary text. */
    int[] encode(String text);

    /**
     * Text of {@code tokens[off, off + len)}. Never throws on odd input: ids that do not form valid UTF-8
     * (a sequence cut in the middle, or an id outside the vocabulary, as a model with a padded vocabulary
     * can sample) come out as U+FFFD.
     */
    String decode(int[] tokens, int off, int len);

    default String decode(int[] tokens) {
        return decode(tokens, 0, tokens.length);
    }

    /** The id placed between documents when a corpus is concatenated (GPT-2: 50256, "<|endoftext|>"). */
    int eotToken();
}
