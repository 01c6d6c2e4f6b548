package dev.jtrain.tensor.io;

import java.nio.file.Path;

/**
 * A safetensors file is malformed, truncated, or does not hold what the caller asked for.
 * The message always names the file and, when one is involved, the tensor.
 * Unchecked: a bad weight file is not something a caller can retry its way out of.
 */
public class SafetensorsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final String tensor;

    public SafetensorsException(Path file, String tensor, String problem) {
        this(file, tensor, problem, null);
    }

    public SafetensorsException(Path file, String tensor, String problem, Throwable cause) {
        super(format(file, tensor, problem), cause);
        this.file = file;
        this.tensor = tensor;
    }

    private static String format(Path file, String tensor, String problem) {
        return "safetensors file=" + file + (tensor == null ? "" : ", tensor=" + tensor) + ": " + problem;
    }

    /** The file involved. */
    public Path file() {
        return file;
    }

    /** The tensor involved, or null when the problem is with the file as a whole (e.g. its header). */
    public String tensor() {
        return tensor;
    }
}
