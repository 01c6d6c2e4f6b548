package dev.jtrain.comm.launch;

import dev.jtrain.comm.store.PrefixStore;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.store.TcpStore;
import dev.jtrain.comm.store.TcpStoreOptions;

import java.util.Map;

import static dev.jtrain.comm.launch.RendezvousEnv.*;

/**
 * Where this process stands in the job, and the store the job meets in ({@code env://} initialisation).
 *
 * <p>Call sequence for every rank: {@code Rendezvous.fromEnv()} → build transports / process group with
 * {@link #store()}, {@link #rank()}, {@link #worldSize()} → {@link #close()} at the end. When the launcher does not
 * host the store, rank 0 hosts it on {@code MASTER_PORT}.
 *
 * <p>Threading: the record is immutable; the store is thread-safe.
 *
 * @param store the job's store, prefixed by the restart attempt (closing the rendezvous closes the connection)
 */
public record Rendezvous(int rank, int worldSize, int localRank, int localWorldSize, String masterAddr, int masterPort,
                         String jobToken, int restartCount, long timeoutMs, Store store, TcpStore connection)
        implements AutoCloseable {

    public static final long DEFAULT_TIMEOUT_MS = 300_000;

    /** Reads the process environment. */
    public static Rendezvous fromEnv() { return fromEnv(System.getenv()); }

    /**
     * Reads {@code env}, validates everything first (one clear error naming the variable) and connects.
     *
     * @throws RendezvousConfigException when a variable is missing or invalid
     */
    public static Rendezvous fromEnv(Map<String, String> env) {
        int worldSize = intVar(env, WORLD_SIZE, 1, Integer.MAX_VALUE, null);
        int rank = intVar(env, RANK, 0, worldSize - 1, null);
        int localWorldSize = intVar(env, LOCAL_WORLD_SIZE, 1, worldSize, Integer.toString(worldSize));
        int localRank = intVar(env, LOCAL_RANK, 0, localWorldSize - 1, Integer.toString(rank % localWorldSize));
        String addr = env.get(MASTER_ADDR);
        if (addr == null || addr.isBlank()) throw missing(MASTER_ADDR, "the host of rank 0 or of the launcher, e.g. 127.0.0.1");
        int port = intVar(env, MASTER_PORT, 1, 65535, null);
        String token = env.get(JOB_TOKEN);
        if (token == null || token.isEmpty()) {
            throw missing(JOB_TOKEN, "a secret shared by all ranks of the job (the launcher generates one)");
        }
        int restart = intVar(env, RESTART_COUNT, 0, Integer.MAX_VALUE, "0");
        long timeoutMs = longVar(env, TIMEOUT_MS, Long.toString(DEFAULT_TIMEOUT_MS));
        boolean launcherHosts = "1".equals(env.get(STORE_IN_LAUNCHER));
        boolean host = rank == 0 && !launcherHosts;
        TcpStore tcp = TcpStore.create(new TcpStoreOptions(addr, port, host, token, timeoutMs, 0));
        Store store = new PrefixStore("attempt" + restart, tcp);
        return new Rendezvous(rank, worldSize, localRank, localWorldSize, addr, port, token, restart, timeoutMs, store, tcp);
    }

    private static RendezvousConfigException missing(String name, String what) {
        return new RendezvousConfigException("environment variable " + name + " is not set; it must be " + what
                + ". Start the program with `jtrain launch --nproc-per-node N -- ...`, which sets RANK, WORLD_SIZE, "
                + "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and JTRAIN_JOB_TOKEN");
    }

    private static int intVar(Map<String, String> env, String name, int min, int max, String dflt) {
        long v = parse(env, name, dflt);
        if (v < min || v > max) {
            throw new RendezvousConfigException("environment variable " + name + "=" + v + " is out of range [" + min + ", " + max + "]");
        }
        return (int) v;
    }

    private static long longVar(Map<String, String> env, String name, String dflt) {
        long v = parse(env, name, dflt);
        if (v <= 0) throw new RendezvousConfigException("environment variable " + name + "=" + v + " must be > 0");
        return v;
    }

    private static long parse(Map<String, String> env, String name, String dflt) {
        String s = env.get(name);
        if (s == null || s.isBlank()) {
            if (dflt == null) throw missing(name, "an integer");
            s = dflt;
        }
        try {
            return Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            throw new RendezvousConfigException("environment variable " + name + "='" + s + "' is not an integer", e);
        }
    }

    /** Closes the store connection (and the store server when this rank hosts it). */
    @Override
    public void close() { connection.close(); }
}
