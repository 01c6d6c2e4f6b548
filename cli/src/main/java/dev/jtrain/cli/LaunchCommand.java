package dev.jtrain.cli;

import dev.jtrain.comm.engine.ClusterEngines;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.engine.JtrainEnvEngine;
import dev.jtrain.comm.engine.NodeLayout;
import dev.jtrain.comm.engine.RankLayout;
import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import dev.jtrain.comm.launch.RendezvousEnv;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * {@code jtrain launch}: starts one process per rank with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT and JTRAIN_JOB_TOKEN set (torchrun's contract), and exits with the first failing rank's
 * status. Run once per node under Slurm ({@code srun --ntasks-per-node=1}) or in a Kubernetes pod, it takes the
 * node count, its node rank, node 0's address and the port from the engine (flags given explicitly win).
 */
@Command(name = "launch", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Start N ranks of a command on this node with the rendezvous environment set.",
                "Output lines are prefixed with [rank N]; when a rank fails the others are stopped and its status returned.",
                "Under Slurm (one task per node) or Kubernetes, --nnodes, --node-rank, --master-addr and --master-port come "
                        + "from the engine."})
final class LaunchCommand implements Callable<Integer> {
    @Option(names = "--nproc-per-node", description = "Processes (ranks) on this node (default: the engine's, e.g. PET_NPROC_PER_NODE).")
    Integer nprocPerNode;
    @Option(names = "--nnodes", description = "Nodes in the job (default: the engine's, else 1).")
    Integer nnodes;
    @Option(names = "--node-rank", description = "Index of this node; node 0 hosts the store (default: the engine's, else 0).")
    Integer nodeRank;
    @Option(names = "--master-addr", description = "Address of node 0 (default: the engine's, else 127.0.0.1).")
    String masterAddr;
    @Option(names = "--master-port", description = "Store port on node 0; 0 picks a free port (single node only). Default: the engine's, else 0.")
    Integer masterPort;
    @Option(names = "--max-restarts", defaultValue = "0", description = "Restart the whole group (all nodes together) this many times after a failure (default: ${DEFAULT-VALUE}).")
    int maxRestarts;
    @Option(names = "--stop-grace-ms", defaultValue = "5000", description = "Time surviving ranks get to exit after SIGTERM (default: ${DEFAULT-VALUE}).")
    long stopGraceMs;
    @Option(names = "--join-timeout-ms", defaultValue = "300000", description = "Multi-node: how long to wait for node 0's store and, before a restart, for every node to stop its ranks (default: ${DEFAULT-VALUE}).")
    long joinTimeoutMs;
    @Option(names = "--min-nodes", defaultValue = "0", description = "Multi-node, with --max-restarts: a restart may continue on this many"
            + " nodes when others do not come back within --join-timeout-ms, or at once when their launcher is gone (its"
            + " connection to the store ended): their ranks are left out, the rest renumbered; training reshards at load and"
            + " keeps its global batch, bitwise the same run under train --grad-reduce ordered. 0 = all nodes (default).")
    int minNodes;
    @Option(names = "--cold-restarts", description = "With --max-restarts: start every rank of a restarted group as a new process."
            + " By default a rank whose process survived the failure continues in it (warm: its code stays compiled), and only"
            + " lost ranks start anew.")
    boolean coldRestarts;
    @Option(names = "--spare", description = "Multi-node: run this launcher as a hot spare with no node of its own. Its ranks"
            + " warm up (a few steps of the job's model alone) and wait; when a node's launcher is lost (its connection to"
            + " the store ended: the host died), the spare takes that node's place in the next restart, so the job"
            + " continues at full size in warm JVMs. Needs --max-restarts; --node-rank is not given (node 0 can not be replaced)."
            + " Under an engine, nodes past --nnodes are spares by themselves (srun -N3 ... jtrain launch --nnodes 2: one spare).")
    boolean spare;
    @Parameters(arity = "1..*", paramLabel = "COMMAND", description = "The program and its arguments, after --.")
    List<String> command;

    @Override
    public Integer call() {
        EngineEnv env = EngineEnv.current();
        Optional<NodeLayout> node = ClusterEngines.nodeLayout(env);
        requireOncePerNode(env, node);
        int nproc = nprocPerNode != null ? nprocPerNode : node.map(NodeLayout::nprocPerNode).orElse(0);
        if (nproc < 1) throw new IllegalArgumentException("--nproc-per-node is required (the engine does not give it)");
        int jobNodes = nnodes != null ? nnodes : node.map(NodeLayout::nnodes).orElse(1);
        if (spare && nodeRank != null) throw new IllegalArgumentException("--spare takes no --node-rank: it takes a lost node's index when it replaces it");
        boolean beyond = spareByLayout(node, nnodes, nodeRank);
        if (beyond) {
            if (maxRestarts < 1)
                throw new IllegalArgumentException(String.format("%s node %d is beyond --nnodes %d: it would run as a hot spare, which"
                        + " needs --max-restarts >= 1 (or ask the engine for %d nodes)", node.get().engine(), node.get().nodeRank(), nnodes, nnodes));
            System.out.printf("[launcher] %s node %d is beyond --nnodes %d: a hot spare (as with --spare)%n", node.get().engine(),
                    node.get().nodeRank(), nnodes);
        }
        boolean asSpare = spare || beyond;
        var options = new LaunchOptions(nproc, jobNodes,
                asSpare ? jobNodes - 1 : nodeRank != null ? nodeRank : node.map(NodeLayout::nodeRank).orElse(0),
                masterAddr != null ? masterAddr : node.map(NodeLayout::masterAddr).orElse("127.0.0.1"),
                masterPort != null ? masterPort : node.map(NodeLayout::masterPort).orElse(0),
                maxRestarts, node.map(NodeLayout::jobToken).orElseGet(() -> env.get(RendezvousEnv.JOB_TOKEN)), stopGraceMs, command,
                joinTimeoutMs, minNodes, !coldRestarts, asSpare);
        return new Launcher(options, System.out).run();
    }

    /**
     * Whether the engine started this launcher on a node past the job's: {@code --nnodes N} given, no
     * {@code --node-rank}, and the engine's node index {@code >= N} (say {@code srun -N3 --ntasks-per-node=1 jtrain
     * launch --nnodes 2}). Such a node has no place in the job; it runs as a hot spare, the way an allocation keeps
     * spare nodes for the job to take when one of its own is lost.
     */
    static boolean spareByLayout(Optional<NodeLayout> engine, Integer nnodes, Integer nodeRank) {
        return nnodes != null && nodeRank == null && engine.isPresent() && engine.get().nodeRank() >= nnodes;
    }

    /**
     * A launcher runs once per node. Started as one of several ranks of an engine's step (srun with several tasks per
     * node, mpirun), each would run a job of its own, one node each, and train alone: refuse, saying what to run.
     */
    static void requireOncePerNode(EngineEnv env, Optional<NodeLayout> node) {
        if (node.isPresent()) return;
        Optional<RankLayout> ranks = ClusterEngines.rankLayout(env);
        if (ranks.isEmpty() || ranks.get().worldSize() == 1 || ranks.get().engine().equals(JtrainEnvEngine.NAME)) return;
        RankLayout r = ranks.get();
        String instead = r.engine().equals("slurm")
                ? "start one task per node (srun --ntasks-per-node=1 ... jtrain launch ...), or let srun start the ranks"
                        + " and drop the launcher (srun ... jtrain train ...)"
                : "let " + r.engine() + " start the ranks and drop the launcher (mpirun -np " + r.worldSize() + " ... jtrain train ...)";
        throw new IllegalArgumentException("jtrain launch runs once per node, but " + r.engine() + " started it as rank "
                + r.rank() + " of " + r.worldSize() + ": each would run a job of its own and train alone. Instead, " + instead);
    }
}
