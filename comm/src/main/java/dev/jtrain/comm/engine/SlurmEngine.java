package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.launch.RendezvousEnv;

import java.util.List;
import java.util.Optional;

/**
 * Tasks of a Slurm job step ({@code srun}): {@code SLURM_PROCID}, {@code SLURM_STEP_NUM_TASKS},
 * {@code SLURM_LOCALID}, {@code SLURM_NODEID}, {@code SLURM_STEP_NODELIST} and {@code SLURM_STEP_TASKS_PER_NODE}
 * (uneven counts such as {@code 3,1} are read per node). The store runs on the step's first node, hosted by its
 * local task 0, on a port derived from the job and step ids ({@link StorePort}); {@code MASTER_ADDR} and
 * {@code MASTER_PORT} override both (then rank 0 hosts). A requeued job's {@code SLURM_RESTART_COUNT} prefixes the
 * store keys.
 *
 * <p>Run once per node ({@code srun --ntasks-per-node=1 jtrain launch ...}) the same variables describe nodes:
 * {@link #node} gives them to the launcher.
 */
public final class SlurmEngine implements ClusterEngine {
    static final String NAME = "slurm";
    private static final String HOW = " (srun passes the caller's environment to every task)";

    @Override public String name() { return NAME; }

    @Override public boolean applies(EngineEnv env) { return env.has("SLURM_PROCID") && env.has("SLURM_STEP_NUM_TASKS"); }

    /** The step as Slurm describes it, checked for consistency. */
    private record Step(int rank, int world, int localRank, int nodeId, List<String> nodes, List<Integer> tasksPerNode,
                        long jobId, long stepId) { }

    private static Step step(EngineEnv env) {
        int world = env.intVar(NAME, "SLURM_STEP_NUM_TASKS", 1, Integer.MAX_VALUE);
        int rank = env.intVar(NAME, "SLURM_PROCID", 0, world - 1);
        // the step's own variables first; inside a step SLURM_NODELIST is the step's too, SLURM_JOB_NODELIST the job's
        String listVar = firstSet(env, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST");
        if (listVar == null) throw new RendezvousConfigException(NAME + ": SLURM_STEP_NODELIST is not set");
        String nodelist = env.get(listVar);
        List<String> nodes = SlurmHostlist.expand(nodelist);
        int nodeId = env.intVar(NAME, "SLURM_NODEID", 0, nodes.size() - 1);
        String tpnVar = firstSet(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
        String tpn = tpnVar == null ? null : env.get(tpnVar);
        List<Integer> tasks = tpn == null ? null : SlurmHostlist.expandTaskCounts(tpn);
        if (tasks != null && tasks.size() != nodes.size()) {
            throw new RendezvousConfigException(NAME + ": " + tpnVar + "='" + tpn + "' lists " + tasks.size()
                    + " nodes but " + listVar + "='" + nodelist + "' has " + nodes.size());
        }
        long sum = tasks == null ? world : tasks.stream().mapToLong(Integer::longValue).sum();
        if (sum != world) {
            throw new RendezvousConfigException(NAME + ": " + tpnVar + "='" + tpn + "' adds up to " + sum
                    + " tasks but SLURM_STEP_NUM_TASKS=" + world);
        }
        int localMax = tasks == null ? world : tasks.get(nodeId);
        int localRank = env.intVar(NAME, "SLURM_LOCALID", 0, Math.max(0, localMax - 1));
        long jobId = env.longVar(NAME, "SLURM_JOB_ID", env.longVar(NAME, "SLURM_JOBID", 0));
        long stepId = env.longVar(NAME, "SLURM_STEP_ID", env.longVar(NAME, "SLURM_STEPID", 0));
        return new Step(rank, world, localRank, nodeId, nodes, tasks, jobId, stepId);
    }

    @Override
    public Optional<RankLayout> ranks(EngineEnv env) {
        Step s = step(env);
        String token = JobToken.require(env, NAME, HOW);
        int port = StorePort.of(env, NAME, s.jobId(), s.stepId());
        StoreAddress store = env.has(RendezvousEnv.MASTER_ADDR)
                ? new StoreAddress(env.get(RendezvousEnv.MASTER_ADDR), port, s.rank() == 0)
                : new StoreAddress(s.nodes().getFirst(), port, s.nodeId() == 0 && s.localRank() == 0);
        int localWorld = s.tasksPerNode() == null ? s.world() : s.tasksPerNode().get(s.nodeId());
        int restart = env.intVar(NAME, "SLURM_RESTART_COUNT", 0, Integer.MAX_VALUE, 0);
        return Optional.of(new RankLayout(NAME, s.rank(), s.world(), s.localRank(), localWorld, s.nodeId(),
                s.nodes().size(), store, token, restart, s.jobId() + "." + s.stepId()));
    }

    /**
     * The node's place when the step runs one task per node (a launcher per node); empty when a node runs several
     * tasks (they are ranks themselves).
     */
    @Override
    public Optional<NodeLayout> node(EngineEnv env) {
        Step s = step(env);
        if (s.world() != s.nodes().size()) return Optional.empty();
        int port = StorePort.of(env, NAME, s.jobId(), s.stepId());
        String master = env.get(RendezvousEnv.MASTER_ADDR, s.nodes().getFirst());
        return Optional.of(new NodeLayout(NAME, s.nodeId(), s.nodes().size(), 0, master, port,
                JobToken.require(env, NAME, HOW)));
    }

    /** The first of {@code names} that is set, or null. */
    private static String firstSet(EngineEnv env, String... names) {
        for (String n : names) if (env.has(n)) return n;
        return null;
    }
}
