package dev.jtrain.tensor.io;

/**
 * Byte layout of a safetensors file (https://github.com/huggingface/safetensors, "Format").
 *
 * <pre>
 *  0               8                     8+N                                   file size
 *  +---------------+---------------------+--------------------------------------+
 *  | N: u64 LE     | header: N bytes of  | data section: tensors back to back,  |
 *  | header length | UTF-8 JSON, padded  | row-major, little-endian; each one's |
 *  |               | with ' ' (0x20)     | [begin, end) is relative to 8+N      |
 *  +---------------+---------------------+--------------------------------------+
 *
 *  header = { "__metadata__": {"key": "value", ...},            (optional, strings only)
 *             "name": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ... }
 * </pre>
 *
 * The data section must be covered exactly: sorted by begin, the first tensor starts at 0, each
 * tensor starts where the previous ended, and the last one ends at the end of the file (no holes,
 * no overlaps, no trailing bytes). Writers pad N to a multiple of {@link #ALIGNMENT_BYTES} so the
 * data section, and with it every 4-byte element, is aligned when the file is memory-mapped.
 */
public final class SafetensorsLayout {
    /** Size of the little-endian u64 header length at offset 0. */
    public static final int HEADER_LENGTH_BYTES = 8;
    /** Largest header accepted (the reference implementation's bound; a larger value means a corrupt or hostile file). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;
    /** Writers pad the header so the data section starts on this boundary. */
    public static final int ALIGNMENT_BYTES = 8;
    /** Header key reserved for the free-form string-to-string metadata map. */
    public static final String METADATA_KEY = "__metadata__";

    private SafetensorsLayout() {
    }

    /** Offset of the data section in a file whose header is {@code headerBytes} long. */
    public static long dataStart(long headerBytes) {
        return HEADER_LENGTH_BYTES + headerBytes;
    }
}
