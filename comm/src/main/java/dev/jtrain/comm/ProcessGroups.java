package dev.jtrain.comm;

import dev.jtrain.comm.launch.CpuBinding;
import dev.jtrain.comm.launch.Rendezvous;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportOptions;
import dev.jtrain.comm.transport.Transports;

/**
 * {@code env://} initialisation, the counterpart of {@code torch.distributed.init_process_group("env://")}: reads
 * RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, JTRAIN_JOB_TOKEN ... (set by {@code jtrain launch}), meets the other
 * ranks in the job's store, connects the transport (shared memory on this host, TCP across hosts;
 * {@code JTRAIN_TRANSPORT} overrides) and builds the world group with {@link ProcessGroupOptions#fromEnv()}. With
 * {@code JTRAIN_CPU_BIND=auto}, ranks sharing a host are first bound to disjoint CPUs ({@link CpuBinding}).
 *
 * <p>Call sequence for every rank: {@code initFromEnv()} → collectives → {@code close()} (which also closes the
 * transport and the store connection).
 */
public final class ProcessGroups {
    private ProcessGroups() {}

    public static ProcessGroup initFromEnv() { return initFromEnv(ProcessGroupOptions.fromEnv()); }

    public static ProcessGroup initFromEnv(ProcessGroupOptions options) {
        Rendezvous rdv = Rendezvous.fromEnv();
        // before the transport starts its threads (they inherit the mask); off unless JTRAIN_CPU_BIND=auto
        CpuBinding.bindLocalRank(System.getenv(CpuBinding.ENV), rdv.localRank(), rdv.localWorldSize());
        Transport transport = null;
        try {
            transport = Transports.create(TransportOptions.fromEnv(System.getenv(), rdv.timeoutMs()), rdv.store(), rdv.rank(), rdv.worldSize());
            ProcessGroup g = ProcessGroup.create(transport, options);
            g.closeAlso(rdv);
            return g;
        } catch (RuntimeException e) {
            if (transport != null) transport.close();
            rdv.close();
            throw e;
        }
    }
}
