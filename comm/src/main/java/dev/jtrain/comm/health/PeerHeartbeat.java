package dev.jtrain.comm.health;

import dev.jtrain.comm.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * Each rank bumps a counter in the store every {@link HeartbeatOptions#intervalMs} and reads every other rank's: a
 * peer whose counter has not moved for {@link HeartbeatOptions#timeoutMs}, measured on this rank's own clock (no
 * clock agreement needed), is reported once as a {@link RankHungException} naming it and its host. A rank that dies
 * is caught sooner by its closed sockets and rings; this catches the one that stays and says nothing (SIGSTOP, a
 * frozen VM, a livelock), which the other ranks would otherwise wait on until the operation timeout. The first rank
 * to find it publishes the finding in the store, and every rank reports that one.
 *
 * <p>The beats run on their own thread and their own store connection: a rank blocked in a long collective or in a
 * store barrier keeps beating, so only the silent rank is named. If the store itself stops answering for the
 * timeout (its host is the one that hung), that is reported instead, as rank -1. Cost: one counter add plus
 * (world - 1) reads per interval per rank, i.e. O(world²) small store requests per interval over the job — fine at
 * the tens of ranks a CPU job has; a large job would watch ring neighbours only.
 *
 * <p>Threading: {@link #start} starts one daemon thread; {@link #close} stops it and closes the store it was given.
 */
public final class PeerHeartbeat implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PeerHeartbeat.class);

    private final Store store;
    private final int rank, world;
    private final HeartbeatOptions options;
    private final IntFunction<String> where;
    private final Consumer<RankHungException> onHung;
    private final Thread thread;
    private volatile boolean stopped;

    private PeerHeartbeat(Store store, int rank, int world, HeartbeatOptions options, IntFunction<String> where,
                          Consumer<RankHungException> onHung) {
        this.store = store;
        this.rank = rank;
        this.world = world;
        this.options = options;
        this.where = where;
        this.onHung = onHung;
        this.thread = Thread.ofPlatform().daemon().name("jtrain-heartbeat-" + rank).unstarted(this::run);
    }

    /**
     * Starts beating and watching.
     *
     * @param store  a connection of its own (closed by {@link #close}), scoped to this job attempt
     * @param where  describes a rank for messages, e.g. "rank 3 on host h2"
     * @param onHung called once, on the heartbeat thread, when a peer or the store goes silent (or another rank
     *               published that one did); beating then stops. See {@link HeartbeatOptions#actGraceMs} before closing links.
     */
    public static PeerHeartbeat start(Store store, int rank, int world, HeartbeatOptions options, IntFunction<String> where,
                                      Consumer<RankHungException> onHung) {
        if (!options.enabled()) throw new IllegalArgumentException("heartbeats are off (timeoutMs=0); do not start one");
        PeerHeartbeat h = new PeerHeartbeat(store, rank, world, options, where, onHung);
        h.thread.start();
        return h;
    }

    static String key(int rank) { return "hb/" + rank; }

    /** The first finding of a silent rank, "RANK message", published so that every rank reports the same one. */
    static final String HUNG_KEY = "hb/hung";
    private static final byte[] NONE = new byte[0];

    /** Added to a rank's counter when it closes its group: peers stop watching it instead of calling it hung. */
    static final long DEPARTED = 1L << 60;

    private void run() {
        long[] seen = new long[world];
        long[] changed = new long[world];
        long start = System.nanoTime();
        Arrays.fill(changed, start);
        boolean[] departed = new boolean[world];
        long lastAnswer = start;
        long timeout = TimeUnit.MILLISECONDS.toNanos(options.timeoutMs());
        while (!stopped) {
            long now;
            try {
                store.add(key(rank), 1);
                now = System.nanoTime();
                for (int p = 0; p < world; p++) {
                    if (p == rank) continue;
                    long v = store.add(key(p), 0);
                    if (v >= DEPARTED) departed[p] = true;
                    if (v != seen[p]) {
                        seen[p] = v;
                        changed[p] = now;
                    }
                }
                lastAnswer = now;
                String published = new String(store.compareSet(HUNG_KEY, NONE, NONE), StandardCharsets.UTF_8);
                if (!published.isEmpty()) { // another rank found one first: act on its finding, naming the same rank
                    int hung = Integer.parseInt(published.substring(0, published.indexOf(' ')));
                    report(new RankHungException(hung, published.substring(published.indexOf(' ') + 1), null));
                    return;
                }
                for (int p = 0; p < world; p++) {
                    if (p == rank || departed[p] || now - changed[p] <= timeout) continue;
                    String why = where.apply(p) + " sent no heartbeat for " + seconds(now - changed[p])
                            + " (" + HeartbeatOptions.TIMEOUT_ENV + "=" + options.timeoutMs() + "): the process is stopped,"
                            + " frozen or hung" + (seen[p] == 0 ? " (it never beat: it did not get this far)" : "")
                            + "; seen by " + where.apply(rank);
                    byte[] first = store.compareSet(HUNG_KEY, NONE, (p + " " + why).getBytes(StandardCharsets.UTF_8));
                    String winner = new String(first, StandardCharsets.UTF_8);
                    report(new RankHungException(Integer.parseInt(winner.substring(0, winner.indexOf(' '))),
                            winner.substring(winner.indexOf(' ') + 1), null));
                    return;
                }
            } catch (RuntimeException e) {
                if (stopped || anyTrue(departed)) return; // the job is ending; the store may leave with its host
                now = System.nanoTime();
                if (now - lastAnswer > timeout) {
                    report(new RankHungException(-1, "the job's store did not answer " + where.apply(rank) + "'s heartbeats for "
                            + seconds(now - lastAnswer) + " (" + HeartbeatOptions.TIMEOUT_ENV + "=" + options.timeoutMs()
                            + "): the process or host that holds it (rank 0's or the launcher's on node 0) is hung or unreachable: "
                            + e.getMessage(), e));
                    return;
                }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(options.intervalMs()));
        }
    }

    private static boolean anyTrue(boolean[] xs) {
        for (boolean x : xs) if (x) return true;
        return false;
    }

    private void report(RankHungException e) {
        if (stopped) return;
        LOG.error("{}", e.getMessage());
        try {
            onHung.accept(e);
        } catch (RuntimeException failed) {
            LOG.error("heartbeat: acting on a hung peer failed", failed);
        }
    }

    private static String seconds(long nanos) {
        return String.format("%.1f s", nanos / 1e9);
    }

    /**
     * Stops beating and tells the peers this rank is leaving (so they do not call it hung), joins the thread, closes
     * the store.
     */
    @Override
    public void close() {
        stopped = true;
        LockSupport.unpark(thread);
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(1_000, 2 * options.intervalMs()));
        try {
            thread.join(java.time.Duration.ofNanos(Math.max(0, until - System.nanoTime())));
            // The departed mark is best effort, and bounded: on a host cut off from the store's, the call would wait out
            // the store's timeout, and a failed rank reports its error only once its group is closed.
            Thread mark = Thread.ofVirtual().name("jtrain-heartbeat-departed-" + rank).start(() -> {
                try {
                    store.add(key(rank), DEPARTED);
                } catch (RuntimeException e) {
                    // the store left first (its host finished), or can not be reached: nobody is left to watch this rank
                }
            });
            mark.join(java.time.Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(100), until - System.nanoTime())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        store.close(); // also ends a departed mark still waiting for its reply
    }
}
