package dev.jtrain.checkpoint;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * Linux file writes straight from off-heap staging through libc (FFM), for one reason: {@code sync_file_range}. A
 * checkpoint smaller than the kernel's dirty-background threshold (10% of RAM) otherwise sits in the page cache until
 * the final {@code fsync}, so copying and disk I/O run one after the other; starting write-back of each chunk as soon
 * as it is copied (SYNC_FILE_RANGE_WRITE, non-blocking) overlaps them, and the final fsync only waits for the tail.
 * The same technique as {@code dd oflag=dsync}-free streaming writers and RocksDB's {@code bytes_per_sync}.
 *
 * <p>{@link #available()} is false off Linux or without native access; callers then use FileChannel.
 */
final class PosixWriter implements AutoCloseable {
    private static final int O_WRONLY = 1, O_CREAT = 0100, O_TRUNC = 01000, O_CLOEXEC = 02000000;
    private static final int SYNC_FILE_RANGE_WRITE = 2;
    private static final MethodHandle OPEN, PWRITE, SYNC_RANGE, FSYNC, CLOSE;
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));

    static {
        MethodHandle open = null, pwrite = null, range = null, fsync = null, close = null;
        try {
            if (System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                Linker.Option errno = Linker.Option.captureCallState("errno");
                open = linker.downcallHandle(libc.find("open").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                        errno, Linker.Option.firstVariadicArg(2));
                pwrite = linker.downcallHandle(libc.find("pwrite").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), errno);
                range = linker.downcallHandle(libc.find("sync_file_range").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT), errno);
                fsync = linker.downcallHandle(libc.find("fsync").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno);
                close = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), errno);
            }
        } catch (RuntimeException | LinkageError e) {
            open = null; // no native access (e.g. --enable-native-access missing): FileChannel path
        }
        OPEN = open;
        PWRITE = pwrite;
        SYNC_RANGE = range;
        FSYNC = fsync;
        CLOSE = close;
    }

    private final Path file;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment state = arena.allocate(CAPTURE);
    private int fd;

    static boolean available() {
        return OPEN != null && !"false".equals(System.getProperty("jtrain.checkpoint.syncFileRange"));
    }

    PosixWriter(Path file) throws IOException {
        this.file = file;
        try {
            fd = (int) OPEN.invokeExact(state, arena.allocateFrom(file.toString()), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        } catch (Throwable t) {
            throw new IOException("open " + file + ": " + t, t);
        }
        if (fd < 0) {
            IOException e = failure("open");
            arena.close();
            throw e;
        }
    }

    /** Writes all of {@code src} at {@code position}, then starts (does not wait for) its write-back. */
    void write(MemorySegment src, long position) throws IOException {
        long done = 0;
        while (done < src.byteSize()) {
            long n;
            try {
                n = (long) PWRITE.invokeExact(state, fd, src.asSlice(done), src.byteSize() - done, position + done);
            } catch (Throwable t) {
                throw new IOException("pwrite " + file + ": " + t, t);
            }
            if (n < 0) {
                if (errno() == 4) continue; // EINTR
                throw failure("pwrite");
            }
            done += n;
        }
        int r;
        try {
            r = (int) SYNC_RANGE.invokeExact(state, fd, position, src.byteSize(), SYNC_FILE_RANGE_WRITE);
        } catch (Throwable t) {
            throw new IOException("sync_file_range " + file + ": " + t, t);
        }
        if (r != 0) throw failure("sync_file_range");
    }

    void fsync() throws IOException {
        int r;
        try {
            r = (int) FSYNC.invokeExact(state, fd);
        } catch (Throwable t) {
            throw new IOException("fsync " + file + ": " + t, t);
        }
        if (r != 0) throw failure("fsync");
    }

    private int errno() {
        return (int) ERRNO.get(state, 0L);
    }

    private IOException failure(String call) {
        return new IOException(call + " " + file + " failed: errno " + errno());
    }

    @Override
    public void close() throws IOException {
        try {
            if (fd >= 0) {
                int r = (int) CLOSE.invokeExact(state, fd);
                fd = -1;
                if (r != 0) throw failure("close");
            }
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("close " + file + ": " + t, t);
        } finally {
            arena.close();
        }
    }
}
