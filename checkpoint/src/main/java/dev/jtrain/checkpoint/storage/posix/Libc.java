package dev.jtrain.checkpoint.storage.posix;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;

/**
 * The libc functions the checkpoint calls through FFM (direct writes here, huge-page staging in the checkpoint
 * package), looked up in one place. A
 * function is null off Linux or without native access ({@code --enable-native-access}); each caller then takes its
 * portable path.
 */
public final class Libc {
    private static final boolean LINUX = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux");

    private Libc() {}

    /** A downcall handle for libc's {@code name}, or null where there is none to be had. */
    public static MethodHandle function(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        if (!LINUX) return null;
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find(name).map(s -> linker.downcallHandle(s, descriptor, options)).orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    /** Whether every one of {@code handles} was found (a caller needs all of its functions or none). */
    public static boolean all(MethodHandle... handles) {
        return Arrays.stream(handles).allMatch(Objects::nonNull);
    }
}
