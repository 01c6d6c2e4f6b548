package dev.jtrain.checkpoint;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Variable-length byte messages (JSON plans, reports) over a {@link ProcessGroup}, whose collectives move fixed-size
 * typed buffers: lengths first (8 bytes per rank), then payloads padded to the longest, as int32 words.
 * Cost: two collectives per call; plans are kilobytes, so latency (α) dominates.
 *
 * <p>Collective: every rank of the group calls the same method in the same order.
 */
final class ByteExchange {
    private ByteExchange() {}

    /** Every rank gets every rank's message, indexed by rank. */
    static List<byte[]> allGather(ProcessGroup pg, byte[] mine) {
        try (Arena a = Arena.ofConfined()) {
            long[] lengths = lengths(pg, a, mine.length);
            int words = words(max(lengths));
            MemorySegment in = a.allocate(4L * words), out = a.allocate(4L * words * pg.size());
            MemorySegment.copy(mine, 0, in, ValueLayout.JAVA_BYTE, 0, mine.length);
            pg.allGather(in, out, words, DType.INT32);
            List<byte[]> all = new ArrayList<>();
            for (int r = 0; r < pg.size(); r++)
                all.add(out.asSlice(4L * words * r, lengths[r]).toArray(ValueLayout.JAVA_BYTE));
            return all;
        }
    }

    /** The root gets every rank's message; other ranks get null. */
    static List<byte[]> gather(ProcessGroup pg, byte[] mine, int root) {
        try (Arena a = Arena.ofConfined()) {
            long[] lengths = lengths(pg, a, mine.length);
            int words = words(max(lengths));
            MemorySegment in = a.allocate(4L * words);
            MemorySegment out = pg.rank() == root ? a.allocate(4L * words * pg.size()) : null;
            MemorySegment.copy(mine, 0, in, ValueLayout.JAVA_BYTE, 0, mine.length);
            pg.gather(in, out, words, DType.INT32, root);
            if (out == null) return null;
            List<byte[]> all = new ArrayList<>();
            for (int r = 0; r < pg.size(); r++)
                all.add(out.asSlice(4L * words * r, lengths[r]).toArray(ValueLayout.JAVA_BYTE));
            return all;
        }
    }

    /** Every rank gets the root's message ({@code mine} is ignored elsewhere). */
    static byte[] broadcast(ProcessGroup pg, byte[] mine, int root) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment len = a.allocate(8);
            if (pg.rank() == root) len.set(ValueLayout.JAVA_LONG, 0, mine.length);
            pg.broadcast(len, 1, DType.INT64, root);
            int n = Math.toIntExact(len.get(ValueLayout.JAVA_LONG, 0));
            int words = words(n);
            MemorySegment buf = a.allocate(4L * Math.max(1, words));
            if (pg.rank() == root) MemorySegment.copy(mine, 0, buf, ValueLayout.JAVA_BYTE, 0, n);
            if (words > 0) pg.broadcast(buf, words, DType.INT32, root);
            return buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    private static long[] lengths(ProcessGroup pg, Arena a, int mine) {
        MemorySegment in = a.allocate(8), out = a.allocate(8L * pg.size());
        in.set(ValueLayout.JAVA_LONG, 0, mine);
        pg.allGather(in, out, 1, DType.INT64);
        return out.toArray(ValueLayout.JAVA_LONG);
    }

    private static long max(long[] xs) {
        long m = 0;
        for (long x : xs) m = Math.max(m, x);
        return m;
    }

    /** At least one word: zero-length collectives are legal but not worth the special cases. */
    private static int words(long bytes) {
        return Math.toIntExact(Math.max(1, (bytes + 3) / 4));
    }
}
