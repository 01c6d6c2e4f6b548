package dev.jtrain.gpt.data;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import org.junit.jupiter.api.Test;

import java.io.InputStream;

import static org.assertj.core.api.Assertions.assertThat;

/** jtrain's GPT-2 BPE against ids from OpenAI's tiktoken (resources/tokenizer/make_gpt2_golden.py). */
class Gpt2BpeTokenizerGoldenTest {
    @Test
    void encodingMatchesTiktokenOnEveryCase() throws Exception {
        JsonNode root;
        try (InputStream in = getClass().getResourceAsStream("/tokenizer/gpt2_golden.json")) {
            root = new JsonMapper().readTree(in);
        }
        Tokenizer gpt2 = new Gpt2BpeTokenizer();
        int n = 0;
        for (JsonNode c : root.get("cases")) {
            String text = c.get("text").asText();
            int[] want = new int[c.get("ids").size()];
            for (int i = 0; i < want.length; i++) want[i] = c.get("ids").get(i).asInt();
            assertThat(gpt2.encode(text)).as("text=%s", text).containsExactly(want);
            assertThat(gpt2.decode(want)).isEqualTo(text);
            n++;
        }
        assertThat(n).isGreaterThanOrEqualTo(12);
    }
}
