package dev.jtrain.checkpoint;

/**
 * One piece a rank writes: local shard {@code localIndex} of its {@link LocalPlan}, stored as tensor {@code tensor} of
 * its shard file, starting {@code begin} bytes into the file's data section (which is also where the piece sits in the
 * rank's staging buffer: staging is laid out exactly as the data section, so writing is one sequential copy).
 */
public record WriteItem(int localIndex, String item, long offset, long length, String tensor, long begin) {
    public long bytes() {
        return 4 * length;
    }
}
