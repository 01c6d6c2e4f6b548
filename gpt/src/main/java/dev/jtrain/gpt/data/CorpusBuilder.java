package dev.jtrain.gpt.data;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Tokenizes a {@link TextSource} into {@code train.bin} + {@code val.bin} in a directory; {@link Corpus} owns
 * caching and publication. Reading and writing stay on the calling thread; pieces of at most
 * {@link #PIECE_BYTES} are tokenized on a small pool, written back in order, with at most 4 pieces per thread
 * in flight so memory stays bounded whatever the corpus size.
 */
final class CorpusBuilder {
    /** Pieces of a long document are tokenized separately, cut at a newline, so memory stays bounded. */
    static final int PIECE_BYTES = 4 << 20;

    private CorpusBuilder() {
    }

    static ObjectNode build(CorpusOptions o, TextSource source, Path tmp, CorpusProgress progress) throws IOException {
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
                        byte[] piece = Arrays.copyOf(buf, cut);
                        inFlight.add(new Pending(CompletableFuture.supplyAsync(() -> encode(tok, piece), pool), false));
                        bytesDone += n;
                        System.arraycopy(buf, cut, buf, 0, len - cut);
                        carry = len - cut;
                        while (inFlight.size() > 4 * threads) drain(inFlight.poll(), out, boundaries);
                        if (eof) break;  // cut == len: nothing carried
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
        ObjectNode m = Corpus.JSON.createObjectNode();
        m.put("formatVersion", Corpus.FORMAT_VERSION);
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

    /** A growable list of longs (document boundaries; a corpus can have millions). */
    static final class LongList {
        private long[] a = new long[64];
        private int n;

        void add(long v) {
            if (n == a.length) a = Arrays.copyOf(a, n * 2);
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
