package dev.jtrain.checkpoint;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/** The checksum as checkpoint metadata spells it: CRC32C (the JDK's hardware intrinsic), 8 lowercase hex digits. */
final class Crc32c {
    /** ByteBuffer views are int-indexed: hash large segments in pieces. */
    private static final long PIECE_BYTES = 64L << 20;

    private Crc32c() {}

    static String hex(long crc) { return String.format("%08x", crc); }

    static String hex(MemorySegment data) {
        CRC32C crc = new CRC32C();
        for (long off = 0; off < data.byteSize(); off += PIECE_BYTES)
            crc.update(data.asSlice(off, Math.min(PIECE_BYTES, data.byteSize() - off)).asByteBuffer());
        return hex(crc.getValue());
    }
}
