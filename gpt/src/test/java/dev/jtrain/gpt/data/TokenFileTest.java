package dev.jtrain.gpt.data;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TokenFileTest {
    @TempDir
    Path dir;

    @Test
    void tokensRoundTripAsLittleEndianUint16() throws IOException {
        Path f = dir.resolve("train.bin");
        int[] tokens = {0x1234, 0, 1, 65535, 50256, 255};
        TokenFile.write(f, 65536, tokens, 0, tokens.length);
        // exactly numpy's np.array(tokens, dtype=np.uint16).tofile(f)
        assertThat(Files.readAllBytes(f)).containsExactly(
                0x34, 0x12, 0, 0, 1, 0, 0xFF, 0xFF, 0x50, 0xC4, 0xFF, 0);
        try (TokenFile t = TokenFile.open(f)) {
            assertThat(t.size()).isEqualTo(6);
            assertThat(t.get(3)).isEqualTo(65535);
            int[] got = new int[8];
            t.read(1, got, 2, 5);
            assertThat(got).containsExactly(0, 0, 0, 1, 65535, 50256, 255, 0);
            assertThatThrownBy(() -> t.read(2, got, 0, 5)).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("first=2, len=5, size=6");
        }
    }

    @Test
    void largeFilesStreamThroughTheWriterBuffer() {
        Path f = dir.resolve("big.bin");
        int n = 1_500_000;  // > the 1 MiB write buffer
        try (TokenFileWriter w = new TokenFileWriter(f, 50257)) {
            for (int i = 0; i < n; i++) w.append(i % 50257);
            assertThat(w.size()).isEqualTo(n);
        }
        try (TokenFile t = TokenFile.open(f)) {
            assertThat(t.size()).isEqualTo(n);
            int[] tail = new int[20_000];
            t.read(n - tail.length, tail, 0, tail.length);
            for (int i = 0; i < tail.length; i++) assertThat(tail[i]).isEqualTo((n - tail.length + i) % 50257);
        }
    }

    @Test
    void vocabularyTooLargeForUint16IsRefused() {
        assertThatThrownBy(() -> new TokenFileWriter(dir.resolve("x.bin"), 100_277))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("vocabSize=100277 does not fit a uint16 token file");
        TokenFile.checkVocab(65536);  // ids 0..65535 fit
    }

    @Test
    void tokenOutsideTheVocabularyIsRefused() {
        try (TokenFileWriter w = new TokenFileWriter(dir.resolve("x.bin"), 256)) {
            w.append(new int[]{1, 2}, 0, 2);
            assertThatThrownBy(() -> w.append(256)).hasMessageContaining("id=256, vocabSize=256, position=2");
            assertThatThrownBy(() -> w.append(-1)).hasMessageContaining("id=-1");
        }
    }

    @Test
    void oddSizedFileIsNotATokenFile() throws IOException {
        Path f = Files.write(dir.resolve("odd.bin"), new byte[]{1, 2, 3});
        assertThatThrownBy(() -> TokenFile.open(f)).hasMessageContaining("odd size").hasMessageContaining("bytes=3");
    }

    @Test
    void emptyFileHasNoTokens() throws IOException {
        Path f = Files.write(dir.resolve("empty.bin"), new byte[0]);
        try (TokenFile t = TokenFile.open(f)) {
            assertThat(t.size()).isZero();
        }
    }
}
