package dev.jtrain.comm.transport;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes a rank may hold for messages that arrived before their receive was posted (MPI's "unexpected message
 * queue"), shared by every link of one transport.
 *
 * <p>Why a budget: a cycle of blocking sends (rank r sends to r+1, then receives from r-1) can only complete if
 * some receiver takes a message in before posting its receive, so transports buffer such messages. Unbounded, a
 * fast sender can fill the receiver's memory; bounded, a link whose next message does not fit is simply not read
 * further (backpressure): the sender blocks, and past the deadline fails with an error that names this budget.
 * Messages whose receive is posted never count against it: they stream straight into the receiver's buffer.
 */
public final class UnexpectedBudget {
    /** Enough for a cycle of blocking sends of several large gradient buckets at once; small against host RAM. */
    public static final long DEFAULT_BYTES = 512L << 20;

    private final long limit;
    private final AtomicLong held = new AtomicLong();

    public UnexpectedBudget(long limitBytes) {
        if (limitBytes < 0) throw new IllegalArgumentException("unexpected-message budget must be >= 0 bytes: " + limitBytes);
        this.limit = limitBytes;
    }

    public static UnexpectedBudget defaults() { return new UnexpectedBudget(DEFAULT_BYTES); }

    /** Takes {@code bytes} from the budget if they fit; false leaves it unchanged. */
    public boolean tryReserve(long bytes) {
        while (true) {
            long h = held.get();
            if (h + bytes > limit) return false;
            if (held.compareAndSet(h, h + bytes)) return true;
        }
    }

    public void release(long bytes) { held.addAndGet(-bytes); }

    public long heldBytes() { return held.get(); }

    public long limitBytes() { return limit; }

    /** For error messages of a link that stopped reading because a message did not fit. */
    public String describeFull(long waitingBytes) {
        return "a " + waitingBytes + "-byte message with no receive posted for it does not fit the unexpected-message budget ("
                + held.get() + " of " + limit + " bytes held); post the receive before the send (irecv/isend or sendRecv) "
                + "or raise the budget (TransportOptions.maxUnexpectedBytes)";
    }
}
