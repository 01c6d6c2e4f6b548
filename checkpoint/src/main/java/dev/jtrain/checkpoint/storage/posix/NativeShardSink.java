package dev.jtrain.checkpoint.storage.posix;

import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.tensor.io.DurableFiles;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Linux file writes straight from off-heap staging through libc (FFM), for two reasons the JDK's FileChannel lacks:
 * <ul>
 *   <li><b>O_DIRECT</b> (the default, see {@code Checkpointer}): the device reads the staging buffer itself. No copy
 *   into the page cache, no dirty-page write-back or reclaim on our cores, which a buffered write of a shard pays
 *   for in kernel CPU time (bench/MEASUREMENTS.md, "direct I/O"). Needs aligned address, offset and length:
 *   the shard file's data section starts on a 4 KiB boundary and staging is page-aligned in whole MiB.</li>
 *   <li>buffered with {@code sync_file_range} (where O_DIRECT is refused, e.g. tmpfs before Linux 6.6): a checkpoint smaller than the
 *   kernel's dirty-background threshold otherwise sits in the page cache until the final {@code fsync}, so copying
 *   and disk I/O run one after the other; starting write-back of each chunk as soon as it is written
 *   (SYNC_FILE_RANGE_WRITE, non-blocking) overlaps them, as RocksDB's {@code bytes_per_sync} does.</li>
 * </ul>
 * Either way the file is fsynced before it is renamed into place ({@link #publish}).
 *
 * <p>{@link #supported()} is false off Linux or without native access; {@link PosixStorage} then uses
 * {@link ChannelShardSink}.
 */
final class NativeShardSink implements ShardSink {
    private static final int O_WRONLY = 1, O_CREAT = 0100, O_TRUNC = 01000, O_CLOEXEC = 02000000;
    private static final int SYNC_FILE_RANGE_WRITE = 2, EINVAL = 22;
    /** O_DIRECT's value differs between architectures; 0 where we do not know it (no direct I/O there). */
    private static final int O_DIRECT = switch (System.getProperty("os.arch", "")) {
        case "amd64", "x86_64" -> 040000;
        case "aarch64" -> 0200000;
        default -> 0;
    };
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO_OPTION = Linker.Option.captureCallState("errno");
    private static final MethodHandle OPEN = Libc.function("open",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            ERRNO_OPTION, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle PWRITE = Libc.function("pwrite",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle SYNC_RANGE = Libc.function("sync_file_range",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT), ERRNO_OPTION);
    private static final MethodHandle FSYNC = Libc.function("fsync", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), ERRNO_OPTION);
    private static final MethodHandle CLOSE = Libc.function("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), ERRNO_OPTION);
    private static final MethodHandle FTRUNCATE = Libc.function("ftruncate",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG), ERRNO_OPTION);
    private static final boolean NATIVE = Libc.all(OPEN, PWRITE, SYNC_RANGE, FSYNC, CLOSE, FTRUNCATE);

    private final Path file;   // the temporary file written
    private final Path target; // its name once published
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment state = arena.allocate(CAPTURE);
    private final boolean direct;
    private int fd;
    private boolean published;

    /** Whether libc's open/pwrite/sync_file_range/fsync were found (Linux). */
    static boolean supported() { return NATIVE; }

    /**
     * Opens {@code file} for writing, with O_DIRECT if {@code direct} and the file system takes it (tmpfs before
     * Linux 6.6, for one, does not: then buffered, see {@link #direct()}); {@link #publish} renames it to {@code target}.
     */
    NativeShardSink(Path file, Path target, boolean direct) throws IOException {
        this.file = file;
        this.target = target;
        int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
        boolean d = direct && O_DIRECT != 0;
        fd = open(flags | (d ? O_DIRECT : 0));
        if (fd < 0 && d && errno() == EINVAL) {
            d = false;
            fd = open(flags);
        }
        this.direct = d;
        if (fd < 0) {
            IOException e = failure("open");
            arena.close();
            throw e;
        }
    }

    private int open(int flags) throws IOException {
        try {
            return (int) OPEN.invokeExact(state, arena.allocateFrom(file.toString()), flags, 0644);
        } catch (Throwable t) {
            arena.close();
            throw new IOException("open " + file + ": " + t, t);
        }
    }

    @Override
    public boolean direct() {
        return direct;
    }

    /**
     * Writes all of {@code src} at {@code position}; buffered, it then starts (does not wait for) the write-back of
     * those bytes; direct, they are on the device (not necessarily durable: that is {@link #fsync}) when it returns.
     */
    @Override
    public void write(MemorySegment src, long position) throws IOException {
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
                if (direct && errno() == EINVAL)
                    throw new ShardSink.DirectRefused("pwrite " + file + " with O_DIRECT failed: errno " + EINVAL + " (EINVAL)");
                throw failure("pwrite");
            }
            if (n == 0) throw new IOException("pwrite " + file + " wrote nothing at offset " + (position + done));
            done += n;
        }
        if (direct) return;
        int r;
        try {
            r = (int) SYNC_RANGE.invokeExact(state, fd, position, src.byteSize(), SYNC_FILE_RANGE_WRITE);
        } catch (Throwable t) {
            throw new IOException("sync_file_range " + file + ": " + t, t);
        }
        if (r != 0) throw failure("sync_file_range");
    }

    @Override
    public void truncate(long length) throws IOException {
        int r;
        try {
            r = (int) FTRUNCATE.invokeExact(state, fd, length);
        } catch (Throwable t) {
            throw new IOException("ftruncate " + file + ": " + t, t);
        }
        if (r != 0) throw failure("ftruncate");
    }

    @Override
    public long size() throws IOException { return Files.size(file); }

    @Override
    public void publish() throws IOException {
        fsync();
        closeFd();
        DurableFiles.moveAtomically(file, target); // made durable by the coordinator's syncStep
        published = true;
    }

    private void fsync() throws IOException {
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
            closeFd();
        } finally {
            if (!published) Files.deleteIfExists(file);
        }
    }

    private void closeFd() throws IOException {
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
            if (fd < 0 && arena.scope().isAlive()) arena.close();
        }
    }
}
