package dev.jtrain.checkpoint;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * CRC32C per piece of a shard file, fed range by range in file order (pieces are contiguous in staging, so any cut
 * into ranges works): whoever touches the bytes last before they go to disk checksums them while they are in cache.
 * The final call must reach the end of the data, which also closes zero-length pieces there.
 */
final class PieceCrcs {
    private final List<WriteItem> items;
    private final long[] out;
    private final CRC32C crc = new CRC32C();
    private int item;

    PieceCrcs(List<WriteItem> items, long[] out) {
        this.items = items;
        this.out = out;
    }

    void update(MemorySegment staging, long from, long n) {
        long end = from + n;
        while (item < items.size()) {
            WriteItem w = items.get(item);
            long a = Math.max(from, w.begin()), b = Math.min(end, w.begin() + w.bytes());
            if (b > a) crc.update(staging.asSlice(a, b - a).asByteBuffer());
            if (w.begin() + w.bytes() > end) return; // the piece goes on in the next range
            out[item++] = crc.getValue();
            crc.reset();
        }
    }
}
