package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.launch.RendezvousEnv;

import java.util.Optional;

import static dev.jtrain.comm.launch.RendezvousEnv.*;

/**
 * jtrain's own variables, the torchrun names ({@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK},
 * {@code LOCAL_WORLD_SIZE}, {@code MASTER_ADDR}, {@code MASTER_PORT}) plus {@code JTRAIN_JOB_TOKEN}, as
 * {@code jtrain launch} sets them. Checked first: they are explicit, and a launcher started under another engine
 * (Slurm, Kubernetes) sets them for its children, which must not be read as the outer engine's ranks. Rank 0 hosts
 * the store unless the launcher does ({@code JTRAIN_STORE_IN_LAUNCHER=1}).
 */
public final class JtrainEnvEngine implements ClusterEngine {
    /** The engine name in a {@link RankLayout} of a process started by {@code jtrain launch} (or by hand). */
    public static final String NAME = "jtrain";

    @Override public String name() { return NAME; }

    /**
     * {@code RANK} is set. Not in a Kubeflow PyTorchJob pod ({@code PET_NNODES}), whose operator sets RANK to the pod's
     * index and WORLD_SIZE to nodes x processes for torchrun to refine: those describe a node, and the Kubernetes
     * engine reads them; a child of jtrain's launcher in such a pod has LOCAL_RANK besides. A WORLD_SIZE without
     * RANK (left over in a batch script) does not hide the engine that started the process ({@link ClusterEngines}).
     */
    @Override public boolean applies(EngineEnv env) {
        boolean kubeflowPod = env.has("PET_NNODES") && !env.has(LOCAL_RANK);
        return env.has(RANK) && !kubeflowPod;
    }

    @Override
    public Optional<RankLayout> ranks(EngineEnv env) {
        int worldSize = env.intVar(NAME, WORLD_SIZE, 1, Integer.MAX_VALUE);
        int rank = env.intVar(NAME, RANK, 0, worldSize - 1);
        int localWorldSize = env.intVar(NAME, LOCAL_WORLD_SIZE, 1, worldSize, worldSize);
        int localRank = env.intVar(NAME, LOCAL_RANK, 0, localWorldSize - 1, rank % localWorldSize);
        String addr = env.get(MASTER_ADDR);
        if (addr == null) throw missing(MASTER_ADDR, "the host of rank 0 or of the launcher, e.g. 127.0.0.1");
        int port = env.intVar(NAME, MASTER_PORT, 1, 65535);
        String token = env.get(JOB_TOKEN);
        if (token == null) throw missing(JOB_TOKEN, "a secret shared by all ranks of the job (the launcher generates one)");
        boolean launcherHosts = "1".equals(env.get(STORE_IN_LAUNCHER));
        int restart = env.intVar(NAME, RESTART_COUNT, 0, Integer.MAX_VALUE, 0);
        int nodeRank = env.intVar(NAME, RendezvousEnv.NODE_RANK, 0, Integer.MAX_VALUE, -1);
        int nnodes = env.intVar(NAME, RendezvousEnv.NNODES, 1, Integer.MAX_VALUE, -1);
        return Optional.of(new RankLayout(NAME, rank, worldSize, localRank, localWorldSize, nodeRank, nnodes,
                new StoreAddress(addr, port, rank == 0 && !launcherHosts), token, restart, ""));
    }

    private static RendezvousConfigException missing(String name, String what) {
        return new RendezvousConfigException("environment variable " + name + " is not set; it must be " + what
                + ". Start the program with `jtrain launch --nproc-per-node N -- ...`, which sets RANK, WORLD_SIZE, "
                + "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and JTRAIN_JOB_TOKEN");
    }
}
