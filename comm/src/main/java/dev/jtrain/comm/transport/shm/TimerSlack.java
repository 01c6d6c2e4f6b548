package dev.jtrain.comm.transport.shm;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Shrinks the Linux timer slack of a waiting thread from the default 50 us to 1 ns ({@code prctl(PR_SET_TIMERSLACK)}),
 * so that {@code LockSupport.parkNanos(5_000)} sleeps about 5 us rather than 55+ (bench/MEASUREMENTS.md, "timer
 * slack"). Short, precise parks are what let oversubscribed ranks (4 on 2 cores)
 * give the CPU away and still answer quickly. A no-op where prctl is unavailable.
 *
 * <p>Threading: per thread; each thread pays the call once.
 */
final class TimerSlack {
    private static final int PR_SET_TIMERSLACK = 29;
    private static final MethodHandle PRCTL = lookup();
    private static final ThreadLocal<Boolean> APPLIED = ThreadLocal.withInitial(() -> Boolean.FALSE);

    private TimerSlack() { }

    @SuppressWarnings("restricted") // needs --enable-native-access, which every jtrain JVM gets
    private static MethodHandle lookup() {
        try {
            if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) return null;
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find("prctl")
                    .map(addr -> linker.downcallHandle(addr,
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
                            Linker.Option.firstVariadicArg(1)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null; // native access disabled or unsupported platform: keep the default slack
        }
    }

    static void minimiseForCurrentThread() {
        if (PRCTL == null || APPLIED.get()) return;
        APPLIED.set(Boolean.TRUE);
        try {
            int ignored = (int) PRCTL.invokeExact(PR_SET_TIMERSLACK, 1L);
        } catch (Throwable t) {
            // best effort: only sleep precision is affected
        }
    }
}
