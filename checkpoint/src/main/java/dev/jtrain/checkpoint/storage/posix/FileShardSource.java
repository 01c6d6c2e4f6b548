package dev.jtrain.checkpoint.storage.posix;

import com.sun.nio.file.ExtendedOpenOption;
import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.checkpoint.storage.ShardSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A shard file read through the page cache, or past it with a second channel opened with O_DIRECT (opened on first
 * use). "Cached" is mincore on a mapping that is never touched,
 * asked of parts of the range so that it can say "mostly".
 */
final class FileShardSource implements ShardSource {
    private static final int PROBE_PARTS = 32;
    private static final long PROBE_PART = 64 << 10;

    private final Path path;
    private final FileChannel channel;
    private final boolean directWanted;
    private FileChannel direct;
    private boolean directTried;

    FileShardSource(Path path, boolean directWanted) throws IOException {
        this.path = path;
        this.channel = FileChannel.open(path, StandardOpenOption.READ);
        this.directWanted = directWanted;
    }

    @Override public long size() throws IOException { return channel.size(); }

    @Override public int read(ByteBuffer dst, long position) throws IOException { return channel.read(dst, position); }

    @Override
    public boolean directAvailable() {
        if (!directTried) {
            directTried = true;
            direct = directWanted ? openDirect(path) : null;
        }
        return direct != null;
    }

    @Override
    public int readDirect(ByteBuffer dst, long position) throws IOException {
        if (!directAvailable()) throw new IOException("no direct reads on " + path);
        return direct.read(dst, position);
    }

    @Override
    public void refuseDirect() {
        closeQuietly(direct);
        direct = null;
        directTried = true;
    }

    @Override
    public boolean cached(long position, long length) {
        if (length <= 0) return false;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = channel.map(FileChannel.MapMode.READ_ONLY, position, length, a);
            // isLoaded is mincore over the whole slice: all or nothing. Asked per part, so that a few pages the kernel
            // dropped (or mincore missed) do not send a mostly cached range to the disk; buffered reads fetch them.
            long part = Math.max(PROBE_PART, (length + PROBE_PARTS - 1) / PROBE_PARTS);
            int parts = 0, loaded = 0;
            for (long at = 0; at < length; at += part, parts++) {
                if (m.asSlice(at, Math.min(part, length - at)).isLoaded()) loaded++;
            }
            return 2 * loaded >= parts;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    @Override
    public void close() {
        closeQuietly(channel);
        closeQuietly(direct);
    }

    /**
     * A second channel that reads past the page cache, or null: the file system refuses it (tmpfs before Linux 6.6),
     * or its block size does not divide the alignment the loader's staging keeps.
     */
    private static FileChannel openDirect(Path path) {
        try {
            long block = Files.getFileStore(path).getBlockSize();
            if (block <= 0 || ShardSink.DIRECT_ALIGN % block != 0) return null;
            return FileChannel.open(path, StandardOpenOption.READ, ExtendedOpenOption.DIRECT);
        } catch (IOException | UnsupportedOperationException e) {
            return null; // buffered reads work everywhere
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception ignored) {
            // reading is over; nothing to lose
        }
    }
}
