package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.Libc;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Native memory for staging buffers, on transparent huge pages where Linux allows it. A direct write pins its source
 * page by page and the snapshot copy walks it once per page: 2 MiB pages make both 512 times fewer. Linux's default
 * THP mode ("madvise") gives huge pages only to regions that ask with {@code madvise(MADV_HUGEPAGE)} before they are
 * first touched, and {@link Arena#allocate} zeroes (touches) what it returns, so large buffers are mapped here with
 * {@code mmap}, advised, then handed to the arena to {@code munmap} when it closes. Anywhere this is not possible
 * (another OS, no native access, a failed call) or wanted ({@link CheckpointerOptions#hugePages}) the arena
 * allocates as usual.
 */
final class StagingMemory {
    static final long HUGE = 2L << 20;
    private static final int PROT_READ = 1, PROT_WRITE = 2, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20, MADV_HUGEPAGE = 14;
    private static final MethodHandle MMAP = Libc.function("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    private static final MethodHandle MUNMAP = Libc.function("munmap",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle MADVISE = Libc.function("madvise",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    private static final boolean NATIVE = Libc.all(MMAP, MUNMAP, MADVISE);

    private StagingMemory() {}

    /** {@code bytes} of zeroed memory aligned to {@code align} (at most 2 MiB), freed when {@code arena} closes. */
    static MemorySegment allocate(Arena arena, long bytes, long align, boolean hugePages) {
        if (!NATIVE || bytes < HUGE || !hugePages)
            return arena.allocate(bytes, align);
        long advised = (bytes + HUGE - 1) / HUGE * HUGE;
        long mapped = advised + HUGE; // room to start on a 2 MiB boundary and cover the last partial huge page
        MemorySegment base;
        try {
            base = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
        } catch (Throwable t) {
            return arena.allocate(bytes, align);
        }
        if (base.address() == -1L || base.address() == 0L) return arena.allocate(bytes, align); // MAP_FAILED
        long baseAddress = base.address();
        long start = (baseAddress + HUGE - 1) / HUGE * HUGE;
        try {
            int ignored = (int) MADVISE.invokeExact(MemorySegment.ofAddress(start), advised, MADV_HUGEPAGE);
        } catch (Throwable t) {
            // a hint only: the mapping works on 4 KiB pages too
        }
        try {
            return MemorySegment.ofAddress(start).reinterpret(bytes, arena, s -> unmap(baseAddress, mapped));
        } catch (RuntimeException e) { // e.g. the arena was closed meanwhile
            unmap(baseAddress, mapped);
            throw e;
        }
    }

    private static void unmap(long address, long bytes) {
        int r;
        try {
            r = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), bytes);
        } catch (Throwable t) {
            throw new IllegalStateException("munmap of a staging buffer failed", t);
        }
        if (r != 0) throw new IllegalStateException("munmap of a " + bytes + "-byte staging buffer at 0x" + Long.toHexString(address) + " failed");
    }
}
