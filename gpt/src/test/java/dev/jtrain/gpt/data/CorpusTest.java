package dev.jtrain.gpt.data;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

class CorpusTest {
    @TempDir
    Path tmp;

    private Path cache() {
        return tmp.resolve("cache");
    }

    private static int[] all(Corpus c) {
        try (TokenFile train = c.openTrain(); TokenFile val = c.openVal()) {
            int[] out = new int[Math.toIntExact(train.size() + val.size())];
            train.read(0, out, 0, (int) train.size());
            val.read(0, out, (int) train.size(), (int) val.size());
            return out;
        }
    }

    private static int[] bytes(String s) {
        return new ByteTokenizer().encode(s);
    }

    private static int[] join(int sep, String... docs) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < docs.length; i++) {
            if (i > 0) out.add(sep);
            for (int b : bytes(docs[i])) out.add(b);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    private Path sampleDirectory() throws IOException {
        Path src = tmp.resolve("src");
        Files.createDirectories(src.resolve("sub"));
        Files.createDirectories(src.resolve(".git"));
        Files.writeString(src.resolve("b.txt"), "second file\n");
        Files.writeString(src.resolve("a.txt"), "first file, naïve\n");
        Files.writeString(src.resolve("sub/Main.java"), "class Main {}\n");
        Files.writeString(src.resolve(".git/HEAD"), "ref: refs/heads/main\n");          // hidden: skipped
        Files.write(src.resolve("data.dat"), new byte[]{'x', 0, 'y'});                   // NUL: binary
        Files.write(src.resolve("logo.png"), "PNG".getBytes(StandardCharsets.US_ASCII)); // binary extension
        return src;
    }

    @Test
    void directoryIsTokenizedInPathOrderWithSeparatorsAndCached() throws IOException {
        Path src = sampleDirectory();
        CorpusOptions o = CorpusOptions.of(src, new ByteTokenizer()).withCacheDir(cache()).withValFraction(0.3);
        Corpus c = Corpus.prepare(o);
        assertThat(c.fromCache()).isFalse();
        assertThat(c.documents()).isEqualTo(3);
        assertThat(c.skippedBinary()).isEqualTo(1);
        assertThat(all(c)).containsExactly(join(0, "first file, naïve\n", "second file\n", "class Main {}\n"));
        // split at the boundary nearest 70%: the last document is validation
        assertThat(c.valTokens()).isEqualTo("class Main {}\n".length());

        Corpus again = Corpus.prepare(o);
        assertThat(again.fromCache()).isTrue();
        assertThat(again.directory()).isEqualTo(c.directory());
        assertThat(again.trainTokens()).isEqualTo(c.trainTokens());

        // editing a file inside the directory changes the key
        Files.writeString(src.resolve("sub/Main.java"), "class Main { int x; }\n");
        Files.setLastModifiedTime(src.resolve("sub/Main.java"), FileTime.fromMillis(System.currentTimeMillis() + 5000));
        Corpus edited = Corpus.prepare(o);
        assertThat(edited.fromCache()).isFalse();
        assertThat(edited.directory()).isNotEqualTo(c.directory());
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void concurrentRanksBuildOnceAndShareTheResult() throws Exception {
        Path src = sampleDirectory();
        CorpusOptions o = CorpusOptions.of(src, new ByteTokenizer()).withCacheDir(cache());
        int ranks = 4;
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(ranks);
        List<java.util.concurrent.Future<Corpus>> results = new ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(ranks)) {
            for (int r = 0; r < ranks; r++)
                results.add(pool.submit(() -> {
                    start.await();
                    return Corpus.prepare(o);
                }));
            int built = 0;
            Path dir = null;
            for (var f : results) {
                Corpus c = f.get();
                if (!c.fromCache()) built++;
                if (dir == null) dir = c.directory();
                assertThat(c.directory()).isEqualTo(dir);
            }
            assertThat(built).isEqualTo(1);
        }
        try (var list = Files.list(cache())) {
            assertThat(list.filter(p -> p.getFileName().toString().contains(".tmp-")).toList()).isEmpty();
        }
    }

    @Test
    void globSelectsFilesByName() throws IOException {
        Corpus c = Corpus.prepare(CorpusOptions.of(sampleDirectory(), new ByteTokenizer()).withCacheDir(cache())
                .withFileGlob("*.java").withValFraction(0));
        assertThat(c.documents()).isEqualTo(1);
        assertThat(all(c)).containsExactly(bytes("class Main {}\n"));
        assertThat(c.valTokens()).isZero();
    }

    @Test
    void zipEntriesAreReadInNameOrderUpToTheByteCap() throws IOException {
        Path zip = tmp.resolve("texts.zip");
        try (ZipOutputStream z = new ZipOutputStream(Files.newOutputStream(zip))) {
            for (String name : new String[]{"pkg/Zeta.java", "pkg/Alpha.java", "README.md", "pkg/Beta.java"}) {
                z.putNextEntry(new ZipEntry(name));
                z.write(("// " + name + "\n").getBytes(StandardCharsets.UTF_8));
                z.closeEntry();
            }
        }
        CorpusOptions o = CorpusOptions.of(zip, new ByteTokenizer()).withCacheDir(cache()).withFileGlob("*.java").withValFraction(0);
        assertThat(all(Corpus.prepare(o))).containsExactly(join(0, "// pkg/Alpha.java\n", "// pkg/Beta.java\n", "// pkg/Zeta.java\n"));

        // cap of 25 bytes: Alpha (18 bytes) whole, Beta cut after 7 bytes ("// pkg/"), Zeta not read
        Corpus capped = Corpus.prepare(o.withMaxBytes(25));
        assertThat(capped.sourceBytes()).isEqualTo(25);
        assertThat(all(capped)).containsExactly(join(0, "// pkg/Alpha.java\n", "// pkg/"));

        // a prepared archive is found by its size and mtime, without opening it: overwritten with bytes that are no
        // zip (same size, same mtime), it still loads from the cache; touched, it is read again and fails
        FileTime mtime = Files.getLastModifiedTime(zip);
        Files.write(zip, new byte[(int) Files.size(zip)]);
        Files.setLastModifiedTime(zip, mtime);
        Corpus cached = Corpus.prepare(o);
        assertThat(cached.fromCache()).isTrue();
        assertThat(all(cached)).containsExactly(join(0, "// pkg/Alpha.java\n", "// pkg/Beta.java\n", "// pkg/Zeta.java\n"));
        Files.setLastModifiedTime(zip, FileTime.fromMillis(mtime.toMillis() + 5000));
        assertThatThrownBy(() -> Corpus.prepare(o)).isInstanceOf(RuntimeException.class);
    }

    @Test
    void singleFileIsSplitAtTheTokenWithoutABoundary() throws IOException {
        Path f = tmp.resolve("shakespeare.txt");
        String text = "To be, or not to be: that is the question.\n".repeat(100);
        Files.writeString(f, text);
        List<long[]> progress = new ArrayList<>();
        Corpus c = Corpus.prepare(CorpusOptions.of(f, new ByteTokenizer()).withCacheDir(cache()),
                (done, total, tokens) -> progress.add(new long[]{done, total, tokens}));
        assertThat(c.trainTokens()).isEqualTo(Math.round(text.length() * 0.9));
        assertThat(c.valTokens()).isEqualTo(text.length() - c.trainTokens());
        assertThat(all(c)).containsExactly(bytes(text));
        assertThat(progress).isNotEmpty();
        assertThat(progress.getLast()).containsExactly(text.length(), text.length(), text.length());
    }

    @Test
    void splitPrefersTheNearestDocumentBoundaryWithinHalfToOneAndAHalfTimesTheTarget() {
        CorpusBuilder.LongList b = new CorpusBuilder.LongList();
        for (long x : new long[]{100, 500, 880, 960}) b.add(x);
        assertThat(CorpusBuilder.split(1000, b, 0.1)).isEqualTo(880);   // nearest to 900, val 120 within [50, 150]
        CorpusBuilder.LongList far = new CorpusBuilder.LongList();
        far.add(500);
        assertThat(CorpusBuilder.split(1000, far, 0.1)).isEqualTo(900);  // val would be 500: cut at the token instead
        assertThat(CorpusBuilder.split(1000, new CorpusBuilder.LongList(), 0)).isEqualTo(1000);
    }

    @Test
    void longDocumentsAreCutIntoPiecesWithoutLosingBytes() throws IOException {
        Path f = tmp.resolve("big.txt");
        byte[] text = new byte[CorpusBuilder.PIECE_BYTES * 2 + 12345];
        for (int i = 0; i < text.length; i++) text[i] = (byte) (i % 97 == 96 ? '\n' : 'a' + i % 26);
        Files.write(f, text);
        Corpus c = Corpus.prepare(CorpusOptions.of(f, new ByteTokenizer()).withCacheDir(cache()));
        int[] got = all(c);
        assertThat(got.length).isEqualTo(text.length);
        for (int i = 0; i < text.length; i++) if (got[i] != (text[i] & 0xff)) throw new AssertionError("byte " + i);
    }

    @Test
    void pieceCutsNeverSplitAUtf8Character() {
        byte[] noNewline = "aaaaé€😀".getBytes(StandardCharsets.UTF_8);  // 4 + 2 + 3 + 4 bytes
        for (int len = 5; len <= noNewline.length; len++) {
            int cut = CorpusBuilder.lastNewline(noNewline, len);
            String head = new String(noNewline, 0, cut, StandardCharsets.UTF_8);
            assertThat(head).as("len=%d cut=%d", len, cut).doesNotContain("\uFFFD");
        }
        byte[] lines = "abcdefg\nhi".getBytes(StandardCharsets.UTF_8);
        assertThat(CorpusBuilder.lastNewline(lines, lines.length)).isEqualTo(8);
    }

    @Test
    void gpt2TokensDecodeBackToTheDocumentsJoinedByEndOfText() throws IOException {
        Path src = sampleDirectory();
        Gpt2BpeTokenizer gpt2 = new Gpt2BpeTokenizer();
        Corpus c = Corpus.prepare(CorpusOptions.of(src, gpt2).withCacheDir(cache()).withValFraction(0.3));
        assertThat(c.tokenizerName()).isEqualTo("gpt2");
        int[] tokens = all(c);
        assertThat(Arrays.stream(tokens).filter(t -> t == 50256).count()).isEqualTo(2);
        assertThat(gpt2.decode(tokens)).isEqualTo("first file, naïve\n<|endoftext|>second file\n<|endoftext|>class Main {}\n");
    }

    @Test
    void sourceWithoutTextIsAnError() throws IOException {
        Path src = tmp.resolve("bin");
        Files.createDirectories(src);
        Files.write(src.resolve("x.txt"), new byte[]{0, 1, 2});
        assertThatThrownBy(() -> Corpus.prepare(CorpusOptions.of(src, new ByteTokenizer()).withCacheDir(cache())))
                .hasMessageContaining("no text documents").hasMessageContaining("skippedBinary=1");
        assertThatThrownBy(() -> Corpus.prepare(CorpusOptions.of(tmp.resolve("missing"), new ByteTokenizer()).withCacheDir(cache())))
                .hasMessageContaining("does not exist");
    }

    @Test
    void jdkSourceZipTokenizesJavaSources() {
        Path srcZip = Path.of(System.getProperty("java.home"), "lib", "src.zip");
        assumeThat(Files.isRegularFile(srcZip)).as("JDK without lib/src.zip").isTrue();
        CorpusOptions o = CorpusOptions.of(srcZip, new ByteTokenizer()).withCacheDir(cache())
                .withFileGlob("*.java").withMaxBytes(300_000);
        long t0 = System.nanoTime();
        Corpus c = Corpus.prepare(o);
        long t1 = System.nanoTime();
        Corpus again = Corpus.prepare(o);
        long t2 = System.nanoTime();
        System.out.printf("src.zip 300 KB: build %.1f ms, cached %.1f ms, %s%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6, c);
        assertThat(c.sourceBytes()).isEqualTo(300_000);
        assertThat(c.trainTokens() + c.valTokens()).isEqualTo(300_000 + c.documents() - 1);
        assertThat(again.fromCache()).isTrue();
        try (TokenFile train = c.openTrain()) {
            int[] head = new int[4000];
            train.read(0, head, 0, head.length);
            assertThat(new ByteTokenizer().decode(head)).contains("package ");
        }
    }
}
