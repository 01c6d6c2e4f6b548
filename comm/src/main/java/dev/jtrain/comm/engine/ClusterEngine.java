package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;

import java.util.Optional;

/**
 * One system that can start a jtrain job's processes (torchrun-style launcher, MPI, Slurm, Kubernetes ...), as an
 * adapter that answers the same few questions for every engine: is this process running under it, and where does it
 * stand in the job (Lightning's {@code ClusterEnvironment}, torchrun's rendezvous handlers).
 *
 * <p>Engines start processes at one of two levels. Most start one process per rank: the engine's variables give
 * this process's rank ({@link #ranks}). Some start one process per node and leave starting the node's ranks to us
 * (Kubeflow's {@code PET_*}, an Indexed Job, or {@code jtrain launch} run once per node under Slurm): they give a
 * {@link NodeLayout} ({@link #node}), and jtrain's launcher starts the ranks with its own variables.
 *
 * <p>Implementations are pure functions of an {@link EngineEnv}; {@link ClusterEngines} picks the first that applies.
 */
public interface ClusterEngine {
    /** Short name shown in logs and errors: {@code jtrain}, {@code mpi}, {@code slurm}, {@code kubernetes}. */
    String name();

    /** Whether this process was started by this engine (its variables are present). */
    boolean applies(EngineEnv env);

    /**
     * This process's place in the job when the engine started one process per rank; empty when it starts one
     * process per node (then {@link #node} answers).
     *
     * @throws RendezvousConfigException when the engine's variables are inconsistent or a
     *                                                          required one (the job token) is missing
     */
    Optional<RankLayout> ranks(EngineEnv env);

    /**
     * This node's place in the job, for a launcher run once per node; empty when the engine's processes are not
     * one per node.
     */
    default Optional<NodeLayout> node(EngineEnv env) { return Optional.empty(); }
}
