package dev.jtrain.comm.health;

import java.util.Map;

/**
 * How ranks watch each other for a process that stops making progress without dying (stopped, frozen, swapped out,
 * wedged in native code): nothing closes its sockets or its shared-memory rings, so only a deadline could catch it,
 * and the operation timeout is long because legitimate collectives can be.
 *
 * @param timeoutMs  a peer that has not beaten for this long is declared hung; 0 turns heartbeats off. Long enough for
 *                   the longest stop-the-world pause the job can have (GC on a large heap), which stops beats too.
 * @param intervalMs how often each rank beats and looks at the others' beats
 */
public record HeartbeatOptions(long timeoutMs, long intervalMs) {
    /** Environment variable for {@link #timeoutMs} ({@code 0} = off). */
    public static final String TIMEOUT_ENV = "JTRAIN_HEARTBEAT_TIMEOUT_MS";
    public static final long DEFAULT_TIMEOUT_MS = 30_000;

    public HeartbeatOptions {
        if (timeoutMs < 0) throw new IllegalArgumentException("heartbeat timeoutMs must be >= 0 (0 = off): timeoutMs=" + timeoutMs);
        if (timeoutMs > 0 && (intervalMs <= 0 || intervalMs * 2 > timeoutMs))
            throw new IllegalArgumentException("heartbeat intervalMs must be > 0 and at most half of timeoutMs=" + timeoutMs
                    + ": intervalMs=" + intervalMs);
    }

    /** Beats ten times per timeout (at least every 3 s, at most every 100 ms): one missed beat is never enough. */
    public static HeartbeatOptions withTimeout(long timeoutMs) {
        return new HeartbeatOptions(timeoutMs, timeoutMs == 0 ? 0 : Math.clamp(timeoutMs / 10, Math.min(100, timeoutMs / 2), 3_000));
    }

    public static HeartbeatOptions defaults() { return withTimeout(DEFAULT_TIMEOUT_MS); }

    public static HeartbeatOptions off() { return new HeartbeatOptions(0, 0); }

    /** {@link #defaults()} unless {@value #TIMEOUT_ENV} says otherwise. */
    public static HeartbeatOptions fromEnv(Map<String, String> env) {
        String v = env.get(TIMEOUT_ENV);
        if (v == null || v.isBlank()) return defaults();
        try {
            return withTimeout(Long.parseLong(v.trim()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_ENV + " must be a whole number of milliseconds (0 = off): " + TIMEOUT_ENV + "=" + v, e);
        }
    }

    public boolean enabled() { return timeoutMs > 0; }

    /**
     * How long a rank that acts on a finding keeps its links open: acting aborts them, and a peer that has not read
     * the finding yet would fail first with "peer closed its transport" instead of naming the silent rank. Every rank
     * reads the store once per interval, so two intervals are enough for all of them.
     */
    public long actGraceMs() { return 2 * intervalMs; }
}
