package dev.jtrain.comm.engine;

/**
 * Where one node stands in the job, for a launcher that starts the node's ranks itself (torchrun's
 * {@code --nnodes/--node-rank/--master-addr}).
 *
 * @param engine       the engine that started this process
 * @param nodeRank     this node's index; node 0 hosts the store
 * @param nnodes       nodes in the job
 * @param nprocPerNode ranks to start on this node as the engine says, or 0 when it leaves that to the command line
 * @param masterAddr   host of node 0, which every node dials
 * @param masterPort   store port on node 0
 * @param jobToken     the job's secret, or null when the engine has none (the launcher then requires one)
 */
public record NodeLayout(String engine, int nodeRank, int nnodes, int nprocPerNode, String masterAddr, int masterPort,
                         String jobToken) {
    public NodeLayout {
        if (nnodes < 1 || nodeRank < 0 || nodeRank >= nnodes) {
            throw new IllegalArgumentException(engine + ": node rank out of range: nodeRank=" + nodeRank + " nnodes=" + nnodes);
        }
        if (nprocPerNode < 0) throw new IllegalArgumentException(engine + ": nprocPerNode must be >= 0: " + nprocPerNode);
    }
}
