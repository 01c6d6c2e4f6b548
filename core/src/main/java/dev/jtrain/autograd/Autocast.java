package dev.jtrain.autograd;

import dev.jtrain.tensor.kernel.Precision;

/**
 * Per-thread precision of matmuls (torch.autocast): inside {@link #bf16()} the matmuls of linear layers and
 * attention round their operands to bf16 and accumulate in fp32 ({@link Precision#BF16}); everything else (layer
 * norm statistics, softmax, loss, reductions, the optimizer) stays fp32, as autocast's lists have it. An op records
 * the precision it ran in, so its backward runs in the same one whichever thread runs it. Use with
 * try-with-resources.
 */
public final class Autocast {
    private static final ThreadLocal<Precision[]> CURRENT = ThreadLocal.withInitial(() -> new Precision[]{Precision.FP32});

    private Autocast() {}

    /** The precision matmuls run in on this thread now. */
    public static Precision precision() {
        return CURRENT.get()[0];
    }

    /** Runs matmuls in bf16 until the returned guard is closed; restores the previous precision. */
    public static Guard bf16() {
        return with(Precision.BF16);
    }

    /** Runs matmuls in {@code precision} until the returned guard is closed. */
    public static Guard with(Precision precision) {
        Precision[] cell = CURRENT.get();
        Precision prev = cell[0];
        cell[0] = precision;
        return () -> cell[0] = prev;
    }

    /** Restores the previous precision. */
    public interface Guard extends AutoCloseable {
        @Override
        void close();
    }
}
