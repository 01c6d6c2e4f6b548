package dev.jtrain.checkpoint.storage.posix;

import com.sun.nio.file.ExtendedOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class FileShardSourceTest {
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    /**
     * The reader asks {@code cached} whether a chunk should go direct. A chunk with a few pages the kernel dropped is
     * still mostly cached and must say so (a whole 8 MiB chunk sent to the disk for one missing page failed a CI run);
     * a chunk of which only the readahead around a read is cached must not.
     */
    @Test
    void aRangeIsCachedWhenMostOfItIsInThePageCacheAndNotWhenLittleIs() throws IOException {
        Path file = dir.resolve("shard");
        assumeTrue(writtenPastTheCache(file, 64 * MIB),
                "the file system of " + dir + " takes no O_DIRECT writes, so no file can be kept out of the page cache");
        try (FileShardSource s = new FileShardSource(file, true)) {
            assertThat(s.cached(0, 64 * MIB)).as("written with O_DIRECT, never read").isFalse();

            // buffered: the first 40 MiB are cached now, and the readahead past them (read_ahead_kb, up to a few MiB)
            ByteBuffer b = ByteBuffer.allocate(40 * MIB);
            while (b.hasRemaining()) s.read(b, b.position());

            assertThat(s.cached(0, 64 * MIB)).as("40 of 64 MiB cached").isTrue();
            assertThat(s.cached(0, 32 * MIB)).as("all of it cached").isTrue();
            assertThat(s.cached(60 * MIB, 4 * MIB)).as("past the read and its readahead").isFalse();
            assertThat(s.cached(0, 0)).isFalse();
        }
    }

    private static boolean writtenPastTheCache(Path file, int bytes) throws IOException {
        ByteBuffer data = ByteBuffer.allocateDirect(bytes + 4096).alignedSlice(4096);
        while (data.hasRemaining()) data.put((byte) data.position());
        data.flip();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT)) {
            while (data.hasRemaining()) ch.write(data, data.position());
            return true;
        } catch (UnsupportedOperationException | IOException e) {
            return false;
        }
    }
}
