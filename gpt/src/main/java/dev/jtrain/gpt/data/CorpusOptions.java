package dev.jtrain.gpt.data;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What {@link Corpus#prepare} tokenizes and where it caches the result.
 *
 * @param source      a text file, a directory (walked recursively) or a .zip/.jar archive of text files
 * @param tokenizer   tokenizer to apply (its {@link Tokenizer#name()} is part of the cache key)
 * @param maxBytes    stop after this many bytes of source text (the document crossing the cap is cut);
 *                    {@link Long#MAX_VALUE} for no cap
 * @param fileGlob    file-name filter for directories and archives, matched on the last path element
 *                    (e.g. {@code "*.java"}); {@code "*"} for all text files
 * @param valFraction share of tokens held out for validation, in [0, 1)
 * @param cacheDir    directory holding one sub-directory per prepared corpus
 */
public record CorpusOptions(Path source, Tokenizer tokenizer, long maxBytes, String fileGlob, double valFraction,
                            Path cacheDir) {
    public static final double DEFAULT_VAL_FRACTION = 0.1;

    public CorpusOptions {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(tokenizer, "tokenizer");
        Objects.requireNonNull(fileGlob, "fileGlob");
        Objects.requireNonNull(cacheDir, "cacheDir");
        if (maxBytes < 1) throw new IllegalArgumentException("maxBytes must be positive: maxBytes=" + maxBytes);
        if (!(valFraction >= 0 && valFraction < 1))
            throw new IllegalArgumentException("valFraction must be in [0, 1): valFraction=" + valFraction);
        TokenFile.checkVocab(tokenizer.vocabSize());
    }

    /** No byte cap, all text files, 10% validation, cache in {@link #defaultCacheDir()}. */
    public static CorpusOptions of(Path source, Tokenizer tokenizer) {
        return new CorpusOptions(source, tokenizer, Long.MAX_VALUE, "*", DEFAULT_VAL_FRACTION, defaultCacheDir());
    }

    public CorpusOptions withMaxBytes(long maxBytes) {
        return new CorpusOptions(source, tokenizer, maxBytes, fileGlob, valFraction, cacheDir);
    }

    public CorpusOptions withFileGlob(String fileGlob) {
        return new CorpusOptions(source, tokenizer, maxBytes, fileGlob, valFraction, cacheDir);
    }

    public CorpusOptions withValFraction(double valFraction) {
        return new CorpusOptions(source, tokenizer, maxBytes, fileGlob, valFraction, cacheDir);
    }

    public CorpusOptions withCacheDir(Path cacheDir) {
        return new CorpusOptions(source, tokenizer, maxBytes, fileGlob, valFraction, cacheDir);
    }

    /** {@code $XDG_CACHE_HOME/jtrain/tokens}, else {@code ~/.cache/jtrain/tokens}. */
    public static Path defaultCacheDir() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("jtrain").resolve("tokens");
    }
}
