package dev.jtrain.comm;

/**
 * Ranks issued different collectives at the same sequence number (different op, count, dtype, reduce op or root, or
 * a different order). Detected in {@code JTRAIN_DEBUG=DETAIL} mode; the message lists this rank's call and every
 * differing rank's call, like {@code TORCH_DISTRIBUTED_DEBUG=DETAIL}.
 */
public class CollectiveMismatchException extends CommException {
    public CollectiveMismatchException(String message) { super(message); }
}
