package dev.jtrain.comm.store;

import dev.jtrain.comm.CommTimeoutException;

import java.util.List;

/**
 * A small key-value store the ranks of a job use to find each other (rendezvous) and to agree on tiny facts
 * (addresses, counters, barriers). The shape is torch.distributed's {@code Store}: values are bytes, counters are
 * decimal ASCII so that {@link #get} of a counter key reads as a number.
 *
 * <p>Threading: implementations are thread-safe; a blocking call ({@link #get}, {@link #wait(List, long)}) may
 * hold back other calls on the same client until it returns (one request at a time per connection).
 */
public interface Store extends AutoCloseable {

    /** Stores {@code value} under {@code key}, replacing any previous value and waking waiters. */
    void set(String key, byte[] value);

    /** Blocks until {@code key} exists, up to {@link #timeoutMs()}, and returns its value. */
    default byte[] get(String key) { return get(key, timeoutMs()); }

    /** Blocks until {@code key} exists, up to {@code timeoutMs}; throws {@link CommTimeoutException}. */
    byte[] get(String key, long timeoutMs);

    /** Atomically adds {@code delta} to the counter at {@code key} (absent counts as 0) and returns the new value. */
    long add(String key, long delta);

    /**
     * Atomically replaces the value of {@code key} by {@code desired} if it currently equals {@code expected}
     * (an absent key matches an empty {@code expected}). Returns the value held after the call: {@code desired}
     * when the swap happened, otherwise the current value ({@code expected} when the key is absent).
     */
    byte[] compareSet(String key, byte[] expected, byte[] desired);

    /** Blocks until every key exists, up to {@code timeoutMs}; throws {@link CommTimeoutException}. */
    void wait(List<String> keys, long timeoutMs);

    /** Removes {@code key}; returns whether it existed. */
    boolean delete(String key);

    /**
     * Asks the store to set {@code key} to {@code value} when this client's connection to it ends: its process exited
     * or was killed, or the network between them failed (ZooKeeper's ephemeral nodes, MQTT's last will). Others learn
     * at once that it is gone, where a silent process could only be told apart from a slow one by a timeout. Not
     * set when the store itself shuts down. Stores without a connection to outlive do not support it.
     */
    default void setWhenGone(String key, byte[] value) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no connection whose end it could report");
    }

    /** Number of keys currently held (all prefixes). */
    long numKeys();

    /**
     * The address of this host as the store's server sees it (the interface that reaches it), or {@code null} when
     * the store is in-process. Transports advertise it so that ranks on other hosts can dial this one.
     */
    default String localAddress() { return null; }

    /** Default timeout of the blocking calls, in milliseconds. */
    long timeoutMs();

    /** Releases the connection (and the server, when this store hosts it); idempotent; never throws. */
    @Override
    void close();
}
