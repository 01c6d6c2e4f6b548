package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link Store} held in this JVM: what threads-as-ranks tests share, and the state behind {@link TcpStoreServer}.
 *
 * <p>Threading: thread-safe; one lock guards the map and one condition wakes every waiter on any change (stores
 * hold a handful of keys per rank, so waking all is cheaper than bookkeeping per key).
 */
public final class InMemoryStore implements Store {
    private final long timeoutMs;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, byte[]> values = new HashMap<>();
    private boolean closed;

    public InMemoryStore(long timeoutMs) {
        if (timeoutMs <= 0) throw new IllegalArgumentException("timeoutMs must be > 0: timeoutMs=" + timeoutMs);
        this.timeoutMs = timeoutMs;
    }

    @Override
    public void set(String key, byte[] value) {
        lock.lock();
        try {
            checkOpen("set", key);
            values.put(key, value.clone());
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public byte[] get(String key, long timeoutMs) { return getShared(key, timeoutMs).clone(); }

    /**
     * Stores {@code value} itself, without the defensive copy: for a caller that hands over an array it never touches
     * again (the TCP server, with each request's freshly read field; values up to megabytes when the store holds
     * in-memory checkpoints).
     */
    void setOwned(String key, byte[] value) {
        lock.lock();
        try {
            checkOpen("set", key);
            values.put(key, value);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** {@link #get}, returning the stored array itself: for a caller that only reads it (the TCP server's reply). */
    byte[] getShared(String key, long timeoutMs) {
        waitFor(List.of(key), timeoutMs, "get");
        lock.lock();
        try {
            byte[] v = values.get(key);
            if (v == null) throw new CommException("store get key=" + key + ": deleted while being read");
            return v;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long add(String key, long delta) {
        lock.lock();
        try {
            checkOpen("add", key);
            byte[] old = values.get(key);
            long now = Math.addExact(old == null ? 0 : parseCounter(key, old), delta);
            values.put(key, Long.toString(now).getBytes(StandardCharsets.US_ASCII));
            changed.signalAll();
            return now;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        lock.lock();
        try {
            checkOpen("compareSet", key);
            byte[] cur = values.get(key);
            if (cur == null) {
                if (expected.length != 0) return expected.clone();
            } else if (!Arrays.equals(cur, expected)) {
                return cur.clone();
            }
            values.put(key, desired.clone());
            changed.signalAll();
            return desired.clone();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void wait(List<String> keys, long timeoutMs) {
        waitFor(keys, timeoutMs, "wait");
    }

    private void waitFor(List<String> keys, long timeoutMs, String op) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        lock.lock();
        try {
            while (true) {
                checkOpen(op, keys.toString());
                if (values.keySet().containsAll(keys)) return;
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    List<String> missing = keys.stream().filter(k -> !values.containsKey(k)).toList();
                    throw new CommTimeoutException("store " + op + " timed out after " + timeoutMs + " ms waiting for keys "
                            + missing + "; a rank did not reach rendezvous (check that every rank started)");
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException("store " + op + " keys=" + keys + ": interrupted", e);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean delete(String key) {
        lock.lock();
        try {
            checkOpen("delete", key);
            boolean had = values.remove(key) != null;
            changed.signalAll();
            return had;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long numKeys() {
        lock.lock();
        try {
            return values.size();
        } finally {
            lock.unlock();
        }
    }

    @Override public long timeoutMs() { return timeoutMs; }

    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen(String op, String key) {
        if (closed) throw new CommException("store " + op + " key=" + key + ": store is closed");
    }

    static long parseCounter(String key, byte[] value) {
        try {
            return Long.parseLong(new String(value, StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            throw new CommException("store add key=" + key + ": existing value is not a decimal counter ("
                    + value.length + " bytes); use a separate key for counters", e);
        }
    }
}
