package dev.jtrain.gpt.data;

import java.util.List;
import java.util.Locale;

/** Looks tokenizers up by the names used in configs and on the command line. */
public final class Tokenizers {
    /** Names {@link #byName} accepts, canonical first. */
    public static final List<String> NAMES = List.of(ByteTokenizer.NAME, Gpt2BpeTokenizer.NAME, "r50k_base");

    private Tokenizers() {
    }

    /**
     * @param name "byte", or "gpt2" (alias "r50k_base"); case-insensitive
     * @throws IllegalArgumentException naming the known tokenizers if {@code name} is not one of them
     */
    public static Tokenizer byName(String name) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        return switch (n) {
            case ByteTokenizer.NAME -> new ByteTokenizer();
            case Gpt2BpeTokenizer.NAME, "r50k_base" -> new Gpt2BpeTokenizer();
            default -> throw new IllegalArgumentException("unknown tokenizer: name=" + name + "; known: " + NAMES);
        };
    }
}
