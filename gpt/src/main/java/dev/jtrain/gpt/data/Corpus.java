package dev.jtrain.gpt.data;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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
    /** Pieces of a long document are tokenized separately, cut at a newline, so memory stays bounded. */
    static final int PIECE_BYTES = 4 << 20;
    private static final JsonMapper JSON = new JsonMapper();
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

    /** Returns the cached corpus for {@code options}, building it first if needed. */
    public static Corpus prepare(CorpusOptions options, CorpusProgress progress) {
        try (TextSource source = TextSource.open(options.source(), options.fileGlob())) {
            String key = cacheKey(options, source);
            Path dir = options.cacheDir().resolve(slug(options) + "-" + key);
            Path meta = dir.resolve(META_FILE);
            if (Files.isRegularFile(meta)) return new Corpus(dir, JSON.readTree(meta.toFile()), true);
            Files.createDirectories(options.cacheDir());
            // Ranks of one job start together: one builds, the others wait for it instead of tokenizing the same
            // text N times. A file lock orders processes; it is held per JVM, so threads (in-process ranks) also
            // take a JVM-wide monitor first (FileChannel.lock would throw OverlappingFileLockException).
            Path lockFile = options.cacheDir().resolve("." + dir.getFileName() + ".lock");
            synchronized (BUILD_LOCKS.computeIfAbsent(lockFile.toAbsolutePath().normalize(), k -> new Object())) {
                try (FileChannel lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                     FileLock ignored = lockChannel.lock()) {
                    if (Files.isRegularFile(meta)) return new Corpus(dir, JSON.readTree(meta.toFile()), true);
                    return build(options, source, dir, key, progress);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare corpus from " + options.source() + " in "
                    + options.cacheDir() + ": " + e.getMessage(), e);
        }
    }

    private static Corpus build(CorpusOptions options, TextSource source, Path dir, String key, CorpusProgress progress)
            throws IOException {
        Path meta = dir.resolve(META_FILE);
        Path tmp = Files.createTempDirectory(options.cacheDir(), "." + dir.getFileName() + ".tmp-");
        try {
            ObjectNode m = build(options, source, tmp, progress);
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

    private static ObjectNode build(CorpusOptions o, TextSource source, Path tmp, CorpusProgress progress) throws IOException {
        Tokenizer tok = o.tokenizer();
        long total = 0;
        for (TextSource.Doc d : source.documents()) total = Math.min(o.maxBytes(), total + Math.max(0, d.size()));
        Path all = tmp.resolve("train.bin");
        LongList boundaries = new LongList();
        long bytesDone = 0;
        int docs = 0, skipped = 0;
        int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
        ArrayDeque<Pending> inFlight = new ArrayDeque<>();
        byte[] buf = new byte[PIECE_BYTES];
        try (ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
                 Thread t = new Thread(r, "corpus-tokenizer");
                 t.setDaemon(true);
                 return t;
             });
             TokenFileWriter out = new TokenFileWriter(all, tok.vocabSize())) {
            for (TextSource.Doc doc : source.documents()) {
                if (bytesDone >= o.maxBytes()) break;
                try (InputStream in = source.open(doc)) {
                    int carry = 0;
                    boolean first = true;
                    while (bytesDone < o.maxBytes()) {
                        int want = (int) Math.min(buf.length - carry, o.maxBytes() - bytesDone);
                        int n = in.readNBytes(buf, carry, want);
                        int len = carry + n;
                        if (len == 0) break;
                        if (first) {
                            if (TextSource.looksBinary(buf, len)) {
                                skipped++;
                                break;
                            }
                            if (docs > 0) inFlight.add(new Pending(CompletableFuture.completedFuture(new int[]{tok.eotToken()}), true));
                            docs++;
                            first = false;
                        }
                        boolean eof = n < want || bytesDone + n >= o.maxBytes();
                        int cut = eof ? len : lastNewline(buf, len);
                        byte[] piece = java.util.Arrays.copyOf(buf, cut);
                        inFlight.add(new Pending(CompletableFuture.supplyAsync(() -> encode(tok, piece), pool), false));
                        bytesDone += n;
                        System.arraycopy(buf, cut, buf, 0, len - cut);
                        carry = len - cut;
                        while (inFlight.size() > 4 * threads) drain(inFlight.poll(), out, boundaries);
                        if (eof) {
                            if (carry > 0) throw new IllegalStateException("unflushed bytes at end of document " + doc.name());
                            break;
                        }
                    }
                }
                while (inFlight.size() > 4 * threads) drain(inFlight.poll(), out, boundaries);
                progress.update(bytesDone, total, out.size());
            }
            while (!inFlight.isEmpty()) drain(inFlight.poll(), out, boundaries);
            progress.update(bytesDone, total, out.size());
        }
        if (docs == 0)
            throw new IllegalArgumentException("corpus source has no text documents: source=" + o.source()
                    + ", fileGlob=" + o.fileGlob() + ", skippedBinary=" + skipped);

        long n = Files.size(all) / TokenFile.BYTES_PER_TOKEN;
        long split = split(n, boundaries, o.valFraction());
        // val.bin is the tail of the stream: copy it out, then cut it off train.bin (no second full copy)
        try (FileChannel src = FileChannel.open(all, StandardOpenOption.READ, StandardOpenOption.WRITE);
             FileChannel val = FileChannel.open(tmp.resolve("val.bin"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long pos = split * TokenFile.BYTES_PER_TOKEN, end = n * TokenFile.BYTES_PER_TOKEN;
            while (pos < end) pos += src.transferTo(pos, end - pos, val);
            val.force(true);
            src.truncate(split * TokenFile.BYTES_PER_TOKEN);
            src.force(true);
        }
        ObjectNode m = JSON.createObjectNode();
        m.put("formatVersion", FORMAT_VERSION);
        m.put("source", o.source().toAbsolutePath().normalize().toString());
        m.put("sourceKind", source.kind());
        m.put("tokenizer", tok.name());
        m.put("vocabSize", tok.vocabSize());
        m.put("maxBytes", o.maxBytes());
        m.put("fileGlob", o.fileGlob());
        m.put("valFraction", o.valFraction());
        m.put("documents", docs);
        m.put("skippedBinary", skipped);
        m.put("sourceBytes", bytesDone);
        m.put("trainTokens", split);
        m.put("valTokens", n - split);
        return m;
    }

    private record Pending(CompletableFuture<int[]> tokens, boolean separator) {
    }

    private static void drain(Pending p, TokenFileWriter out, LongList boundaries) {
        int[] t;
        try {
            t = p.tokens().get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while tokenizing", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("tokenizing failed: " + e.getCause(), e.getCause());
        }
        out.append(t, 0, t.length);
        if (p.separator()) boundaries.add(out.size());  // next document starts here
    }

    private static int[] encode(Tokenizer tok, byte[] piece) {
        // bytes go straight to byte tokens: a malformed UTF-8 file stays byte-exact
        if (tok instanceof ByteTokenizer b) return b.encode(piece, 0, piece.length);
        return tok.encode(new String(piece, StandardCharsets.UTF_8));
    }

    /**
     * Where to cut a full buffer: after the last newline in its second half, else at the last UTF-8
     * character start (a newline is ASCII, so neither cut splits a multi-byte character).
     */
    static int lastNewline(byte[] buf, int len) {
        for (int i = len - 1; i >= len / 2; i--) if (buf[i] == '\n') return i + 1;
        for (int i = len - 1; i >= Math.max(0, len - 4); i--) {
            int b = buf[i] & 0xff;
            if ((b & 0xC0) == 0x80) continue;             // continuation byte: keep looking for the lead byte
            int seq = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
            return i + seq <= len ? len : (i == 0 ? len : i);
        }
        return len;  // not UTF-8 anyway; cut anywhere
    }

    /** Token index where validation starts; see the class comment for the rule. */
    static long split(long n, LongList boundaries, double valFraction) {
        long target = Math.round(n * (1 - valFraction));
        if (valFraction == 0 || target >= n) return n;
        long wantVal = n - target;
        long best = -1;
        for (int i = 0; i < boundaries.size(); i++) {
            long b = boundaries.get(i);
            if (b <= 0 || b >= n) continue;
            if (best < 0 || Math.abs(b - target) < Math.abs(best - target)) best = b;
        }
        if (best > 0 && n - best >= wantVal / 2.0 && n - best <= wantVal * 1.5) return best;
        return Math.max(1, target);
    }

    private static String cacheKey(CorpusOptions o, TextSource source) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            source.fingerprint(md);
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

    /** A growable list of longs (document boundaries; a corpus can have millions). */
    static final class LongList {
        private long[] a = new long[64];
        private int n;

        void add(long v) {
            if (n == a.length) a = java.util.Arrays.copyOf(a, n * 2);
            a[n++] = v;
        }

        long get(int i) {
            return a[i];
        }

        int size() {
            return n;
        }
    }
}
