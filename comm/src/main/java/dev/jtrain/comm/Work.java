package dev.jtrain.comm;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Handle of an asynchronous communication operation (the shape of torch c10d's {@code Work}).
 *
 * <p>Buffer contract: the caller must neither read nor write any buffer passed to the operation until the Work has
 * completed. With {@code JTRAIN_DEBUG=DETAIL} small buffers are checksummed at issue and again when the operation
 * starts (and, for input-only buffers, when it ends) and a change fails the Work with {@link BufferModifiedException}.
 *
 * <p>Failure: a Work completes exceptionally with a {@link CommException} (a {@link CommTimeoutException} on timeout)
 * whose message names this rank, the operation, its sequence number and the peer involved.
 *
 * <p>Threading: every method may be called from any thread, except that blocking in {@link #waitFor} on the
 * group's own communication thread is refused (it would deadlock, cf. Netty's {@code checkDeadLock}).
 */
public interface Work {
    /** True once the operation finished, successfully or not. */
    boolean isCompleted();

    /** True once finished successfully. */
    boolean isSuccess();

    /** Blocks until completion; throws the operation's {@link CommException} if it failed. */
    void waitFor();

    /**
     * Blocks at most {@code timeoutMs}; throws {@link CommTimeoutException} if still running then (the operation
     * itself continues and may still complete), or the operation's exception if it failed.
     */
    void waitFor(long timeoutMs);

    /** The failure, or null while running or after success. */
    CommException exception();

    /**
     * A view for composition (a copy: completing it does not affect the operation). On failure it completes
     * exceptionally with a {@link CompletionException} whose cause is the {@link CommException}.
     */
    CompletableFuture<Void> future();

    /** Short description, e.g. {@code "rank 1 allReduce #7 (count=1024 dtype=FLOAT32 op=SUM algo=ring)"}. */
    String description();
}
