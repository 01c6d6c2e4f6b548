package dev.jtrain.gpt.data;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TokenizersTest {
    private static final String MIXED = "public static void main(String[] args) { // naïve café ✓ 😀\n\tint x = 42; }";

    @Test
    void byteTokenizerIsUtf8Bytes() {
        Tokenizer t = Tokenizers.byName("byte");
        assertThat(t.vocabSize()).isEqualTo(256);
        assertThat(t.encode("Aé")).containsExactly(0x41, 0xC3, 0xA9);
        assertThat(t.decode(t.encode(MIXED))).isEqualTo(MIXED);
        assertThat(t.eotToken()).isEqualTo(0);
    }

    @Test
    void byteTokenizerDecodesInvalidUtf8AsReplacementCharacters() {
        Tokenizer t = new ByteTokenizer();
        int[] emoji = t.encode("😀");           // 4 bytes
        assertThat(t.decode(emoji, 0, 2)).isEqualTo("\uFFFD");
        assertThat(t.decode(new int[]{'a', 0xFF, 'b'})).isEqualTo("a\uFFFDb");
        assertThat(t.decode(new int[]{'a', 300, 'b', -1})).isEqualTo("a\uFFFDb\uFFFD");   // ids of a padded vocabulary
        assertThat(t.decode(new int[]{'x', 'a', 'b', 'y'}, 1, 2)).isEqualTo("ab");
    }

    @Test
    void gpt2MatchesKnownTiktokenIds() {
        Tokenizer t = Tokenizers.byName("gpt2");
        assertThat(t.vocabSize()).isEqualTo(50257);
        assertThat(t.eotToken()).isEqualTo(50256);
        // tiktoken.get_encoding("gpt2").encode("Hello world") == [15496, 995]
        assertThat(t.encode("Hello world")).containsExactly(15496, 995);
        assertThat(t.decode(t.encode(MIXED))).isEqualTo(MIXED);
    }

    @Test
    void gpt2EncodesTheEndOfTextStringAsOrdinaryText() {
        Tokenizer t = new Gpt2BpeTokenizer();
        int[] ids = t.encode("a<|endoftext|>b");
        assertThat(ids).doesNotContain(50256);
        assertThat(t.decode(ids)).isEqualTo("a<|endoftext|>b");
    }

    @Test
    void gpt2DecodeNeverThrows() {
        Tokenizer t = new Gpt2BpeTokenizer();
        int[] emoji = t.encode("😀");
        assertThat(emoji.length).isGreaterThan(1);
        assertThat(t.decode(emoji, 0, 1)).contains("\uFFFD");
        assertThat(t.decode(new int[]{15496, 50300, 995})).isEqualTo("Hello\uFFFD world");
        assertThat(t.decode(new int[]{50256})).isEqualTo("<|endoftext|>");
    }

    @Test
    void unknownNameListsTheKnownOnes() {
        assertThatThrownBy(() -> Tokenizers.byName("sentencepiece"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name=sentencepiece").hasMessageContaining("byte").hasMessageContaining("gpt2");
        assertThat(Tokenizers.byName(" GPT2 ").name()).isEqualTo("gpt2");
        assertThat(Arrays.asList(Tokenizers.byName("r50k_base").name())).containsExactly("gpt2");
    }
}
