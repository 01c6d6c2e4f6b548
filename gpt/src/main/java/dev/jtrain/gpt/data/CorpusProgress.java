package dev.jtrain.gpt.data;

/** Progress of {@link Corpus#prepare}, called from the preparing thread after each document. */
@FunctionalInterface
public interface CorpusProgress {
    CorpusProgress NONE = (bytesDone, bytesTotal, tokens) -> { };

    /**
     * @param bytesDone  source bytes tokenized so far
     * @param bytesTotal source bytes to tokenize (after the cap), or -1 if unknown
     * @param tokens     tokens produced so far
     */
    void update(long bytesDone, long bytesTotal, long tokens);
}
