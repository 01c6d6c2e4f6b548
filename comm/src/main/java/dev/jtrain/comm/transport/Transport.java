package dev.jtrain.comm.transport;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;

import java.lang.foreign.MemorySegment;

/**
 * Point-to-point byte movement between the ranks of one group: the only thing collective algorithms use.
 *
 * <p>Semantics (the contract every implementation — TCP, shared memory, in-process — must honour):
 * <ul>
 *   <li>Messages between an ordered pair (src, dst) with the same tag are delivered in send order; the receiver
 *       states the exact byte length it expects ({@code dst.byteSize()}) and a length mismatch is a
 *       {@link CommException} naming both ranks and the tag.</li>
 *   <li>{@link #send} returns when {@code src} may be reused (copied out or delivered); it may return before the
 *       peer has received. {@link #recv} returns when {@code dst} holds the message.</li>
 *   <li>A send does not wait for its receive to be posted: a receiver inside any call takes early messages into
 *       buffers, within an {@link UnexpectedBudget} (bounded memory). So a cycle of blocking sends completes at
 *       every world size as long as each message fits the budget; one that does not stays in the link and its
 *       sender blocks (backpressure) until its receive is posted.</li>
 *   <li>{@link #sendRecv} makes progress on both directions at once, so a ring where every rank sends to its
 *       right and receives from its left never deadlocks, whatever the message size.</li>
 *   <li>Every blocking call fails within {@link #timeoutMs()} with a {@link CommTimeoutException},
 *       and immediately with a {@link CommException} when the peer's process is gone; both name
 *       this rank, the peer and the tag.</li>
 *   <li>Sending to or receiving from oneself ({@code peer == rank()}) is legal and copies.</li>
 * </ul>
 *
 * <p>Threading: calls for different (peer, tag) pairs may come from different threads concurrently; calls for the
 * same (peer, tag) in the same direction must be serialised by the caller. {@link #close} may be called from any
 * thread, also while another thread is blocked, and makes that call fail promptly.
 */
public interface Transport extends AutoCloseable {
    int rank();

    int size();

    /** Timeout applied to each blocking call, in milliseconds. */
    long timeoutMs();

    void send(int peer, int tag, MemorySegment src);

    void recv(int peer, int tag, MemorySegment dst);

    /** Sends {@code src} to {@code to} and receives {@code dst} from {@code from} concurrently. */
    void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag);

    /**
     * Like {@link #sendRecv}, but the message from {@code from} (exactly {@code acc.byteSize()} bytes, whole elements)
     * is folded into {@code acc} with {@code combiner} instead of overwriting it. {@code to < 0} only receives.
     * {@code acc} must not overlap {@code src}.
     *
     * <p>This default lands the message in a temporary first; transports that return true from
     * {@link #combinesOnArrival} override it to combine while the bytes stream in (no second pass over memory).
     */
    default void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner combiner) {
        Combiner.requireWholeElements(acc, combiner);
        MemorySegment in = CombineScratch.forThisThread(acc.byteSize());
        if (to < 0) recv(from, tag, in);
        else sendRecv(to, src, from, in, tag);
        combiner.combine(acc, in, acc.byteSize() / combiner.elementBytes());
    }

    /**
     * Whether {@link #sendRecvCombine} with these peers combines as bytes arrive. When false, callers with scratch
     * of their own (collective algorithms) do better receiving into it and reducing themselves.
     */
    default boolean combinesOnArrival(int to, int from) { return false; }

    /** The kind of link to {@code peer}. */
    LinkKind linkKind(int peer);

    /** Releases sockets, threads and shared-memory files; idempotent; never throws. */
    @Override
    void close();
}
