package dev.jtrain.comm.launch;

import java.util.List;

/**
 * What {@link Launcher} starts, validated once.
 *
 * @param nprocPerNode   processes on this node
 * @param nnodes         nodes in the job
 * @param nodeRank       this node's index; node 0 hosts the store
 * @param masterAddr     host of node 0 (store address)
 * @param masterPort     store port; 0 on a single node picks a free one
 * @param maxRestarts    how many times the whole group is restarted after a failure (torchrun --max-restarts)
 * @param jobToken       secret for the store and transports (the CLI passes the engine's or JTRAIN_JOB_TOKEN);
 *                       {@code null} on a single node makes a fresh random one, and is refused for several nodes
 * @param stopGraceMs    how long surviving ranks get to exit after SIGTERM before they are killed
 * @param command        the program to run on every rank
 * @param joinTimeoutMs  multi-node: how long a launcher waits for node 0's store and, before a restart, for every
 *                       node to have stopped its ranks; a node missing then is left out if {@code minNodes} remain,
 *                       else named, and the job fails
 * @param minNodes       multi-node: the fewest nodes a restart may continue with (torchrun's --nnodes MIN:MAX lower
 *                       bound); 0 = all of them
 * @param warmRestarts   with {@code maxRestarts}: ranks that survive a failure continue in their JVM ({@link WarmRestart}),
 *                       instead of being stopped and started again
 * @param spare          multi-node: this launcher is a hot spare ({@link SpareNode}) with no node of its own; it takes
 *                       the place of a node whose launcher is lost. Its {@code nodeRank} is the node whose rows its
 *                       ranks warm up on meanwhile (any but 0: every node runs the same shapes)
 */
public record LaunchOptions(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, int maxRestarts,
                            String jobToken, long stopGraceMs, List<String> command, long joinTimeoutMs, int minNodes,
                            boolean warmRestarts, boolean spare) {
    public static final long DEFAULT_JOIN_TIMEOUT_MS = 300_000;

    public LaunchOptions(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, int maxRestarts,
                         String jobToken, long stopGraceMs, List<String> command) {
        this(nprocPerNode, nnodes, nodeRank, masterAddr, masterPort, maxRestarts, jobToken, stopGraceMs, command, 0, 0);
    }

    public LaunchOptions(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, int maxRestarts,
                         String jobToken, long stopGraceMs, List<String> command, long joinTimeoutMs, int minNodes) {
        this(nprocPerNode, nnodes, nodeRank, masterAddr, masterPort, maxRestarts, jobToken, stopGraceMs, command, joinTimeoutMs,
                minNodes, true, false);
    }

    public LaunchOptions {
        if (nprocPerNode < 1) throw new RendezvousConfigException("--nproc-per-node must be >= 1: " + nprocPerNode);
        if (nnodes < 1) throw new RendezvousConfigException("--nnodes must be >= 1: " + nnodes);
        if (nodeRank < 0 || nodeRank >= nnodes) {
            throw new RendezvousConfigException("--node-rank must be in [0, " + (nnodes - 1) + "]: " + nodeRank);
        }
        if (masterAddr == null || masterAddr.isBlank()) masterAddr = "127.0.0.1";
        if (masterPort < 0 || masterPort > 65535) throw new RendezvousConfigException("--master-port out of range: " + masterPort);
        if (nnodes > 1 && masterPort == 0) {
            throw new RendezvousConfigException("--master-port is required with --nnodes > 1 (every node must dial the same port)");
        }
        if (maxRestarts < 0) throw new RendezvousConfigException("--max-restarts must be >= 0: " + maxRestarts);
        if (jobToken != null && jobToken.isEmpty()) jobToken = null;
        if (jobToken == null && nnodes > 1) {
            throw new RendezvousConfigException("set " + RendezvousEnv.JOB_TOKEN + " to the same secret on every node for a multi-node job");
        }
        if (stopGraceMs <= 0) stopGraceMs = 5_000;
        if (command == null || command.isEmpty()) throw new RendezvousConfigException("no command to launch: jtrain launch ... -- COMMAND ARGS");
        command = List.copyOf(command);
        if (joinTimeoutMs <= 0) joinTimeoutMs = DEFAULT_JOIN_TIMEOUT_MS;
        if (minNodes < 0 || minNodes > nnodes)
            throw new RendezvousConfigException("--min-nodes must be in [1, " + nnodes + "] (0 = all): " + minNodes);
        if (minNodes == 0) minNodes = nnodes;
        if (spare && nnodes < 2) throw new RendezvousConfigException("--spare needs a multi-node job (--nnodes >= 2): it takes a lost node's place");
        if (spare && maxRestarts < 1)
            throw new RendezvousConfigException("--spare needs --max-restarts >= 1: it takes a lost node's place in a restart of the group");
        if (spare && nodeRank == 0) throw new RendezvousConfigException("a spare can not stand in for node 0, which hosts the job's store");
        if (minNodes < 1) minNodes = 1;
    }

    public int worldSize() { return nprocPerNode * nnodes; }
}
