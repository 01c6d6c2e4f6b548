package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousEnv;

import java.util.List;
import java.util.Optional;

/**
 * Detection, in a fixed order: jtrain's own variables, then MPI, then Slurm, then Kubernetes. The first engine
 * whose variables are present decides; later ones are not consulted, so that a rank inside {@code salloc ... mpirun}
 * is an MPI rank (Slurm's variables there describe nodes) and a child of {@code jtrain launch} under Slurm is the
 * launcher's rank.
 */
public final class ClusterEngines {
    private static final JtrainEnvEngine JTRAIN = new JtrainEnvEngine();
    public static final List<ClusterEngine> ALL = List.of(JTRAIN, new MpiEngine(), new SlurmEngine(), new KubernetesEngine());

    private ClusterEngines() {}

    /**
     * The engine that started this process, if any. With none, a WORLD_SIZE set on its own still means jtrain's
     * variables were meant, so that the missing RANK is reported rather than a lone process trained.
     */
    public static Optional<ClusterEngine> detect(EngineEnv env) {
        Optional<ClusterEngine> found = ALL.stream().filter(e -> e.applies(env)).findFirst();
        if (found.isEmpty() && env.has(RendezvousEnv.WORLD_SIZE)) return Optional.of(JTRAIN);
        return found;
    }

    /** This process's rank layout when an engine started it as a rank; empty when none did or it started a node. */
    public static Optional<RankLayout> rankLayout(EngineEnv env) {
        return detect(env).flatMap(e -> e.ranks(env));
    }

    /** This process's node layout when an engine started it once per node. */
    public static Optional<NodeLayout> nodeLayout(EngineEnv env) {
        return detect(env).flatMap(e -> e.node(env));
    }
}
