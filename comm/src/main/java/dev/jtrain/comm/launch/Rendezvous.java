package dev.jtrain.comm.launch;

import dev.jtrain.comm.engine.ClusterEngine;
import dev.jtrain.comm.engine.ClusterEngines;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.engine.RankLayout;
import dev.jtrain.comm.engine.StoreAddress;
import dev.jtrain.comm.store.PrefixStore;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.store.TcpStore;
import dev.jtrain.comm.store.TcpStoreOptions;

import java.util.Map;

import static dev.jtrain.comm.launch.RendezvousEnv.*;

/**
 * Where this process stands in the job, and the store the job meets in ({@code env://} initialisation).
 *
 * <p>Call sequence for every rank: {@code Rendezvous.fromEnv()} (detects the engine that started the process:
 * {@code jtrain launch}, MPI, Slurm; see {@link ClusterEngines}) → build transports / process group with
 * {@link #store()}, {@link #rank()}, {@link #worldSize()} → {@link #close()} at the end. The process the engine's
 * layout names hosts the store ({@link StoreAddress#hostedHere()}).
 *
 * <p>Threading: the record is immutable; the store is thread-safe.
 *
 * @param layout the rank's place as the engine describes it
 * @param store  the job's store, prefixed by the restart attempt (closing the rendezvous closes the connection)
 */
public record Rendezvous(RankLayout layout, long timeoutMs, Store store, TcpStore connection) implements AutoCloseable {

    public static final long DEFAULT_TIMEOUT_MS = 300_000;

    /** Reads the process environment. */
    public static Rendezvous fromEnv() { return fromEnv(EngineEnv.current()); }

    /** Reads {@code env} as the environment of a process on this host (tests). */
    public static Rendezvous fromEnv(Map<String, String> env) { return fromEnv(EngineEnv.of(env, EngineEnv.current().hostName())); }

    /**
     * Detects the engine, validates its variables first (one clear error naming the engine and variable) and
     * connects to (or hosts) the store.
     *
     * @throws RendezvousConfigException when no engine started this process, or a variable is missing or invalid
     */
    public static Rendezvous fromEnv(EngineEnv env) {
        RankLayout layout = layoutFromEnv(env);
        long timeoutMs = env.longVar("jtrain", TIMEOUT_MS, DEFAULT_TIMEOUT_MS);
        if (timeoutMs <= 0) throw new RendezvousConfigException("environment variable " + TIMEOUT_MS + "=" + timeoutMs + " must be > 0");
        return connect(layout, timeoutMs);
    }

    /** The layout of the engine that started this process as a rank. */
    public static RankLayout layoutFromEnv(EngineEnv env) {
        ClusterEngine engine = ClusterEngines.detect(env).orElseThrow(() -> new RendezvousConfigException(
                "no cluster engine started this process: environment variable " + RANK + " is not set (nor MPI's, Slurm's"
                        + " or Kubernetes'). Start the program with `jtrain launch --nproc-per-node N -- ...`, srun, or"
                        + " mpirun; jtrain launch sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,"
                        + " MASTER_PORT and JTRAIN_JOB_TOKEN"));
        return engine.ranks(env).orElseThrow(() -> new RendezvousConfigException(engine.name() + " starts one process per"
                + " node, not per rank: run `jtrain launch` (or `jtrain train --nproc N`) there, which starts the node's ranks"));
    }

    /** Connects to the store the layout names, hosting it first when the layout says this process does. */
    public static Rendezvous connect(RankLayout layout, long timeoutMs) {
        var s = layout.store();
        TcpStore tcp = TcpStore.create(new TcpStoreOptions(s.host(), s.port(), s.hostedHere(), layout.jobToken(), timeoutMs, 0));
        Store store = new PrefixStore("attempt" + layout.restartCount(), tcp);
        return new Rendezvous(layout, timeoutMs, store, tcp);
    }

    /**
     * A second connection to the job's store, with this attempt's keys, for a thread that must not wait behind the
     * main connection's blocking calls (heartbeats); the caller closes it.
     *
     * @param timeoutMs how long a request may go unanswered before it fails
     */
    public Store openConnection(long timeoutMs) {
        var s = layout.store();
        TcpStore tcp = TcpStore.create(new TcpStoreOptions(s.host(), connection.port(), false, layout.jobToken(), timeoutMs, 0));
        return PrefixStore.owning("attempt" + layout.restartCount(), tcp);
    }

    public int rank() { return layout.rank(); }

    public int worldSize() { return layout.worldSize(); }

    public int localRank() { return layout.localRank(); }

    public int localWorldSize() { return layout.localWorldSize(); }

    public int restartCount() { return layout.restartCount(); }

    public String jobToken() { return layout.jobToken(); }

    /** Closes the store connection (and the store server when this rank hosts it). */
    @Override
    public void close() { connection.close(); }
}
