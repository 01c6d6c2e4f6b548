package dev.jtrain.gpt.data;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * A text source tokenized once into nanoGPT-style {@code train.bin}/{@code val.bin} ({@link TokenFile}s)
 * under a cache directory, so the second run starts instantly.
 *
 * <p>Layout of the token stream: documents in {@link TextSource} order, separated by the tokenizer's
 * end-of-text token ({@code doc0 EOT doc1 EOT doc2}). Validation is the tail: the split is put at the
 * document boundary nearest to {@code (1 - valFraction) * N} when that keeps the validation share within
 * 0.5x..1.5x of the target, else exactly at that token (a single file has no boundary).
 *
 * <p>Cache key: SHA-256 of the source's identity ({@link TextSource#fingerprint}: path, size, mtime),
 * tokenizer name, byte cap, file glob and val fraction. A build goes to a temporary directory that is
 * renamed into place only when complete, so an interrupted run leaves nothing that looks valid. Concurrent
 * callers (ranks as processes or threads) are serialized by a lock file per key: one builds, the rest reuse.
 *
 * <p>Tokenization of pieces runs on a small pool (ordered results, bounded in-flight work); reading and
 * writing stay on the calling thread.
 */
public final class Corpus {
    /** Bumped when the token stream layout changes, so old caches are not reused. */
    static final int FORMAT_VERSION = 1;
    static final String META_FILE = "corpus.json";
    static final JsonMapper JSON = new JsonMapper();
    private static final ConcurrentHashMap<Path, Object> BUILD_LOCKS = new ConcurrentHashMap<>();

    private final Path dir;
    private final String tokenizer;
    private final long trainTokens;
    private final long valTokens;
    private final int documents;
    private final int skippedBinary;
    private final long sourceBytes;
    private final boolean fromCache;

    private Corpus(Path dir, JsonNode meta, boolean fromCache) {
        this.dir = dir;
        this.tokenizer = meta.path("tokenizer").asText();
        this.trainTokens = meta.path("trainTokens").asLong();
        this.valTokens = meta.path("valTokens").asLong();
        this.documents = meta.path("documents").asInt();
        this.skippedBinary = meta.path("skippedBinary").asInt();
        this.sourceBytes = meta.path("sourceBytes").asLong();
        this.fromCache = fromCache;
    }

    /**
     * Returns the cached corpus for {@code options}, building it first if needed. The cache is looked up before the
     * source is opened ({@link TextSource#fingerprint(Path, String, MessageDigest)}).
     */
    public static Corpus prepare(CorpusOptions options, CorpusProgress progress) {
        try {
            String key = cacheKey(options);
            Path dir = options.cacheDir().resolve(slug(options) + "-" + key);
            Path meta = dir.resolve(META_FILE);
            if (Files.isRegularFile(meta)) return new Corpus(dir, JSON.readTree(meta.toFile()), true);
            try (TextSource source = TextSource.open(options.source(), options.fileGlob())) {
                return prepareLocked(options, source, dir, key, progress);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare corpus from " + options.source() + " in "
                    + options.cacheDir() + ": " + e.getMessage(), e);
        }
    }

    /** Builds the corpus under the build lock, unless another process built it meanwhile. */
    private static Corpus prepareLocked(CorpusOptions options, TextSource source, Path dir, String key, CorpusProgress progress)
            throws IOException {
        Path meta = dir.resolve(META_FILE);
        Files.createDirectories(options.cacheDir());
        // Ranks of one job start together: one builds, the others wait for it instead of tokenizing the same
        // text N times. A file lock orders processes; it is held per JVM, so threads (in-process ranks) also
        // take a JVM-wide monitor first (FileChannel.lock would throw OverlappingFileLockException).
        Path lockFile = options.cacheDir().resolve("." + dir.getFileName() + ".lock");
        synchronized (BUILD_LOCKS.computeIfAbsent(lockFile.toAbsolutePath().normalize(), k -> new Object())) {
            try (FileChannel lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                lockChannel.lock();  // released when the channel closes
                if (Files.isRegularFile(meta)) return new Corpus(dir, JSON.readTree(meta.toFile()), true);
                return build(options, source, dir, key, progress);
            }
        }
    }

    private static Corpus build(CorpusOptions options, TextSource source, Path dir, String key, CorpusProgress progress)
            throws IOException {
        Path meta = dir.resolve(META_FILE);
        Path tmp = Files.createTempDirectory(options.cacheDir(), "." + dir.getFileName() + ".tmp-");
        try {
            ObjectNode m = CorpusBuilder.build(options, source, tmp, progress);
            m.put("cacheKey", key);
            Files.write(tmp.resolve(META_FILE), JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(m));
            try {
                Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                if (!Files.isRegularFile(meta)) throw e;  // else another builder (lock not honoured, e.g. NFS) won
            }
            return new Corpus(dir, JSON.readTree(meta.toFile()), false);
        } finally {
            deleteTree(tmp);
        }
    }

    public static Corpus prepare(CorpusOptions options) {
        return prepare(options, CorpusProgress.NONE);
    }

    private static String cacheKey(CorpusOptions o) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            TextSource.fingerprint(o.source(), o.fileGlob(), md);
            String rest = "format=" + FORMAT_VERSION + "\ntokenizer=" + o.tokenizer().name() + "\nvocab=" + o.tokenizer().vocabSize()
                    + "\nmaxBytes=" + o.maxBytes() + "\nglob=" + o.fileGlob() + "\nval=" + o.valFraction() + "\n";
            md.update(rest.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(md.digest(), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 missing from the JDK", e);
        }
    }

    private static String slug(CorpusOptions o) {
        String name = o.source().toAbsolutePath().normalize().getFileName() == null ? "root"
                : o.source().toAbsolutePath().normalize().getFileName().toString();
        return name.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + o.tokenizer().name();
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path q : walk.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(q);
        }
    }

    /** Directory holding train.bin, val.bin and corpus.json. */
    public Path directory() {
        return dir;
    }

    public Path trainFile() {
        return dir.resolve("train.bin");
    }

    public Path valFile() {
        return dir.resolve("val.bin");
    }

    public TokenFile openTrain() {
        return TokenFile.open(trainFile());
    }

    public TokenFile openVal() {
        return TokenFile.open(valFile());
    }

    public long trainTokens() {
        return trainTokens;
    }

    public long valTokens() {
        return valTokens;
    }

    /** Text documents included (binary files skipped are not counted). */
    public int documents() {
        return documents;
    }

    /** Files skipped because they contain NUL bytes. */
    public int skippedBinary() {
        return skippedBinary;
    }

    /** Source bytes tokenized (after the cap). */
    public long sourceBytes() {
        return sourceBytes;
    }

    public String tokenizerName() {
        return tokenizer;
    }

    /** True when this call found the corpus already built. */
    public boolean fromCache() {
        return fromCache;
    }

    @Override
    public String toString() {
        return "Corpus[" + dir + ", tokenizer=" + tokenizer + ", documents=" + documents + ", train=" + trainTokens
                + ", val=" + valTokens + (fromCache ? ", cached" : "") + "]";
    }
}
