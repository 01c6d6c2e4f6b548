package dev.jtrain.tensor.kernel;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Loads a position-independent x86-64 function, assembled from {@code core/src/main/asm} and shipped as a
 * resource, into executable memory and returns a downcall handle to it. This is how jtrain reaches instructions
 * the Vector API does not expose (the bf16 dot product) while a fresh machine still needs only a JDK: no
 * compiler, no shared library to extract. Pages are mapped writable, filled, then switched to read+execute
 * (never both writable and executable); they live as long as the JVM.
 */
final class MachineCode {
    private static final int PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4;
    private static final int MAP_PRIVATE = 0x02, MAP_ANONYMOUS = 0x20;

    private MachineCode() {}

    /**
     * A handle to the function at the start of resource {@code name} (next to this class).
     *
     * @throws IllegalStateException naming the step that failed (resource, mmap, mprotect, native access)
     */
    static MethodHandle load(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        byte[] code;
        try (InputStream in = MachineCode.class.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException("machine code " + name + " is missing from the jar");
            code = in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read machine code " + name + ": " + e, e);
        }
        try {
            Linker linker = Linker.nativeLinker();
            var lookup = linker.defaultLookup();
            MethodHandle mmap = linker.downcallHandle(lookup.find("mmap").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
            MethodHandle mprotect = linker.downcallHandle(lookup.find("mprotect").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
            long len = (code.length + 4095) & ~4095L;
            MemorySegment page = (MemorySegment) mmap.invokeExact(MemorySegment.NULL, len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
            if (page.address() == -1L || page.address() == 0L) throw new IllegalStateException("mmap of " + len + " bytes failed");
            MemorySegment.copy(code, 0, page.reinterpret(len), ValueLayout.JAVA_BYTE, 0, code.length);
            int rc = (int) mprotect.invokeExact(page, len, PROT_READ | PROT_EXEC);
            if (rc != 0) throw new IllegalStateException("mprotect(PROT_EXEC) was refused (a hardened kernel or SELinux policy?)");
            return linker.downcallHandle(page, descriptor, options);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("cannot load machine code " + name + ": " + e.getMessage(), e);
        } catch (Throwable e) {
            throw new IllegalStateException("cannot load machine code " + name + " (is --enable-native-access=ALL-UNNAMED set?): " + e, e);
        }
    }

    /**
     * Refuses a call whose {@code extentFloats} floats from float {@code offFloats} would reach outside
     * {@code buffer}: the machine code reads and writes without bounds checks, so its Java caller checks first.
     *
     * @throws IndexOutOfBoundsException naming {@code kernel} and {@code what}
     */
    static void checkExtent(String kernel, String what, MemorySegment buffer, int offFloats, long extentFloats) {
        if (offFloats < 0 || (offFloats + extentFloats) * Float.BYTES > buffer.byteSize())
            throw new IndexOutOfBoundsException(kernel + ": the " + what + " (" + extentFloats + " floats from float "
                    + offFloats + ") does not fit its buffer of " + buffer.byteSize() / Float.BYTES + " floats");
    }
}
