package dev.jtrain.comm;

import dev.jtrain.comm.algo.ReduceKernels;
import dev.jtrain.comm.health.HeartbeatOptions;
import dev.jtrain.comm.health.PeerHeartbeat;
import dev.jtrain.comm.launch.CpuBinding;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.launch.Rendezvous;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportOptions;
import dev.jtrain.comm.transport.Transports;

/**
 * {@code env://} initialisation, the counterpart of {@code torch.distributed.init_process_group("env://")}: reads
 * RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, JTRAIN_JOB_TOKEN ... (set by {@code jtrain launch}), meets the other
 * ranks in the job's store, connects the transport (shared memory on this host, TCP across hosts;
 * {@code JTRAIN_TRANSPORT} overrides) and builds the world group with {@link ProcessGroupOptions#fromEnv()}, its ranks
 * watching each other's heartbeats ({@link HeartbeatOptions#fromEnv}, {@code JTRAIN_HEARTBEAT_TIMEOUT_MS}). Ranks
 * sharing a host are first bound to disjoint CPUs ({@link CpuBinding}; {@code JTRAIN_CPU_BIND=none} opts out,
 * {@link TransportOptions#cpuBind}). The link figures measured at the job's first start are kept in its store
 * ({@link LinkCostCache}): a group restarted after a failure starts without measuring them again.
 *
 * <p>Call sequence for every rank: {@code initFromEnv()} → collectives → {@code close()} (which also closes the
 * transport and the store connection).
 */
public final class ProcessGroups {
    private ProcessGroups() {}

    public static ProcessGroup initFromEnv() { return initFromEnv(ProcessGroupOptions.fromEnv()); }

    /**
     * Compiles, once per JVM, what every group's start runs and its collectives reduce with
     * ({@link ReduceKernels#warmUp}), for a process that will join a group later and has the time now: a node warming
     * its ranks up before it joins a job. Without it the first group start of such a JVM pays for the compile while
     * every other rank waits in its first exchange.
     */
    public static void warmUp() { ReduceKernels.warmUp(); }

    public static ProcessGroup initFromEnv(ProcessGroupOptions options) {
        return initFromEnv(options, HeartbeatOptions.fromEnv(System.getenv()));
    }

    /**
     * As {@link #initFromEnv(ProcessGroupOptions)}, with ranks watching each other's heartbeats: a rank that goes
     * silent for {@link HeartbeatOptions#timeoutMs} aborts the world group on every other rank, naming it.
     */
    public static ProcessGroup initFromEnv(ProcessGroupOptions options, HeartbeatOptions heartbeat) {
        return init(EngineEnv.current(), options, heartbeat);
    }

    /**
     * The world group of the rank {@code env} describes (a process restarted in its JVM gets each attempt's variables
     * from its launcher, see {@link dev.jtrain.comm.launch.WarmRestart}), with the options it sets.
     */
    public static ProcessGroup init(EngineEnv env) {
        return init(env, ProcessGroupOptions.fromEnv(env.vars()), HeartbeatOptions.fromEnv(env.vars()));
    }

    private static ProcessGroup init(EngineEnv env, ProcessGroupOptions options, HeartbeatOptions heartbeat) {
        Rendezvous rdv = Rendezvous.fromEnv(env);
        Transport transport = null;
        try {
            TransportOptions transportOptions = TransportOptions.fromEnv(env.vars(), rdv.timeoutMs()).withJobToken(rdv.jobToken());
            // before the transport starts its threads (they inherit the mask); JTRAIN_CPU_BIND=none opts out
            CpuBinding.bindLocalRank(transportOptions.cpuBind(), rdv.localRank(), rdv.localWorldSize());
            transport = Transports.create(transportOptions, rdv.store(), rdv.rank(), rdv.worldSize());
            String costKey = LinkCostCache.key(rdv.localWorldSize());
            // rank 0 alone looks; the group start hands its choice to every rank (ProcessGroupOptions.linkCosts)
            if (rdv.rank() == 0 && options.costModel() == null && options.linkCosts() == null && rdv.worldSize() > 1) {
                options = LinkCostCache.lookup(rdv.connection(), costKey).map(options::withLinkCosts).orElse(options);
            }
            ProcessGroup g = ProcessGroup.create(transport, options);
            g.closeAlso(rdv);
            if (g.rank() == 0 && g.size() > 1 && g.measuredLinkCosts() != null) {
                LinkCostCache.publish(rdv.connection(), costKey, g.measuredLinkCosts());
            }
            if (heartbeat.enabled() && g.size() > 1) {
                HostTopology t = g.topology();
                PeerHeartbeat beat = PeerHeartbeat.start(rdv.openConnection(heartbeat.timeoutMs()), g.rank(), g.size(),
                        heartbeat, r -> "rank " + r + (t == null ? "" : " on host " + t.hostName(t.hostOf(r))), e -> g.abort(e, heartbeat.actGraceMs()));
                g.closeAlso(beat); // closed before the rendezvous: its "departed" mark needs the store
            }
            return g;
        } catch (RuntimeException e) {
            if (transport != null) transport.close();
            rdv.close();
            throw e;
        }
    }
}
