package dev.jtrain.gpt.data;

import java.nio.charset.StandardCharsets;

/**
 * One token per UTF-8 byte, vocabulary 256. Needs no vocabulary file and never meets an unknown
 * character, which is why the embedded demo uses it (Karpathy's char-level nanoGPT, on bytes).
 * The end-of-text token is byte 0 (NUL): text files never contain it (that is how {@link Corpus}
 * tells text from binary), so it cannot be confused with content.
 */
public final class ByteTokenizer implements Tokenizer {
    public static final String NAME = "byte";
    public static final int EOT = 0;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int vocabSize() {
        return 256;
    }

    @Override
    public int[] encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] out = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) out[i] = bytes[i] & 0xff;
        return out;
    }

    /** Encodes raw bytes without a round trip through String (malformed UTF-8 in a file stays byte-exact). */
    public int[] encode(byte[] bytes, int off, int len) {
        int[] out = new int[len];
        for (int i = 0; i < len; i++) out[i] = bytes[off + i] & 0xff;
        return out;
    }

    @Override
    public String decode(int[] tokens, int off, int len) {
        byte[] bytes = new byte[len];
        int n = 0;
        StringBuilder sb = null;
        for (int i = 0; i < len; i++) {
            int t = tokens[off + i];
            if (t >= 0 && t < 256) {
                bytes[n++] = (byte) t;
            } else {
                // an id beyond the byte range (padded vocabulary): flush what we have and mark it
                if (sb == null) sb = new StringBuilder(len);
                sb.append(new String(bytes, 0, n, StandardCharsets.UTF_8)).append('\uFFFD');
                n = 0;
            }
        }
        // String(byte[], UTF_8) replaces malformed sequences with U+FFFD and never throws
        String tail = new String(bytes, 0, n, StandardCharsets.UTF_8);
        return sb == null ? tail : sb.append(tail).toString();
    }

    @Override
    public int eotToken() {
        return EOT;
    }

    @Override
    public String toString() {
        return "ByteTokenizer[vocab=256]";
    }
}
