package dev.jtrain.comm.store;

import java.util.List;

/**
 * A view of another store whose keys all live under {@code prefix + "/"}, so that sub-groups and restarts
 * (one prefix per attempt) do not see each other's keys. Closing it closes the underlying store only if it
 * {@link #owning owns} it.
 *
 * <p>Threading: as the underlying store.
 */
public final class PrefixStore implements Store {
    private final String prefix;
    private final Store inner;
    private final boolean owns;

    public PrefixStore(String prefix, Store inner) { this(prefix, inner, false); }

    private PrefixStore(String prefix, Store inner, boolean owns) {
        if (prefix.isEmpty()) throw new IllegalArgumentException("prefix must not be empty");
        this.prefix = prefix + "/";
        this.inner = inner;
        this.owns = owns;
    }

    /** A view that closes {@code inner} when it is closed (a connection opened for it alone). */
    public static PrefixStore owning(String prefix, Store inner) { return new PrefixStore(prefix, inner, true); }

    private String k(String key) { return prefix + key; }

    @Override public void set(String key, byte[] value) { inner.set(k(key), value); }

    @Override public byte[] get(String key, long timeoutMs) { return inner.get(k(key), timeoutMs); }

    @Override public long add(String key, long delta) { return inner.add(k(key), delta); }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return inner.compareSet(k(key), expected, desired);
    }

    @Override
    public void wait(List<String> keys, long timeoutMs) {
        inner.wait(keys.stream().map(this::k).toList(), timeoutMs);
    }

    @Override public boolean delete(String key) { return inner.delete(k(key)); }

    @Override public void setWhenGone(String key, byte[] value) { inner.setWhenGone(k(key), value); }

    /** Counts all keys of the underlying store (like torch's PrefixStore). */
    @Override public long numKeys() { return inner.numKeys(); }

    @Override public long timeoutMs() { return inner.timeoutMs(); }

    @Override public String localAddress() { return inner.localAddress(); }

    @Override
    public void close() {
        if (owns) inner.close();
    }
}
