package dev.jtrain.gpt.data;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingType;
import com.knuddels.jtokkit.api.IntArrayList;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * GPT-2's byte-level BPE (OpenAI's r50k_base, via jtokkit): vocabulary 50257, of which id 50256 is
 * "<|endoftext|>". Encoding is "ordinary" (tiktoken's encode_ordinary, as nanoGPT's prepare.py uses), so
 * the literal text "<|endoftext|>" inside a document is split into ordinary tokens and cannot fake a
 * document boundary.
 */
public final class Gpt2BpeTokenizer implements Tokenizer {
    public static final String NAME = "gpt2";
    public static final int VOCAB_SIZE = 50257;
    public static final int EOT = 50256;
    private static final byte[] REPLACEMENT = "\uFFFD".getBytes(StandardCharsets.UTF_8);

    /** Loading the 50k merge ranks takes ~100 ms, so one shared instance (jtokkit encodings are immutable). */
    private static final class Holder {
        static final Encoding R50K = Encodings.newLazyEncodingRegistry().getEncoding(EncodingType.R50K_BASE);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    @Override
    public int[] encode(String text) {
        return Holder.R50K.encodeOrdinary(text).toArray();
    }

    @Override
    public String decode(int[] tokens, int off, int len) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(len * 4);
        IntArrayList run = new IntArrayList(Math.min(len, 1024));
        for (int i = 0; i < len; i++) {
            int t = tokens[off + i];
            if (t >= 0 && t < VOCAB_SIZE) {
                run.add(t);
            } else {
                flush(run, out);
                out.writeBytes(REPLACEMENT);
            }
        }
        flush(run, out);
        // tokens are byte pieces; a cut multi-byte character decodes to U+FFFD instead of throwing
        return out.toString(StandardCharsets.UTF_8);
    }

    private static void flush(IntArrayList run, ByteArrayOutputStream out) {
        if (run.isEmpty()) return;
        out.writeBytes(Holder.R50K.decodeBytes(run));
        run.clear();
    }

    @Override
    public int eotToken() {
        return EOT;
    }

    @Override
    public String toString() {
        return "Gpt2BpeTokenizer[r50k_base, vocab=50257]";
    }
}
