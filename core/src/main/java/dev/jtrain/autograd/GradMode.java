package dev.jtrain.autograd;

/** Per-thread switch for graph recording (torch.no_grad). Use with try-with-resources. */
public final class GradMode {
    private static final ThreadLocal<boolean[]> ENABLED = ThreadLocal.withInitial(() -> new boolean[]{true});

    private GradMode() {}

    public static boolean isEnabled() {
        return ENABLED.get()[0];
    }

    /** Disables recording until the returned guard is closed; restores the previous state. */
    public static Guard noGrad() {
        return set(false);
    }

    public static Guard enableGrad() {
        return set(true);
    }

    private static Guard set(boolean value) {
        boolean[] cell = ENABLED.get();
        boolean prev = cell[0];
        cell[0] = value;
        return () -> cell[0] = prev;
    }

    /** Restores the previous grad mode. */
    public interface Guard extends AutoCloseable {
        @Override
        void close();
    }
}
