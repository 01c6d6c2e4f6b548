package dev.jtrain.cli;

import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code jtrain launch}: starts one process per rank with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT and JTRAIN_JOB_TOKEN set (torchrun's contract), and exits with the first failing rank's
 * status. Example: {@code jtrain launch --nproc-per-node 4 -- ./jtrain train --config small.json}.
 */
@Command(name = "launch", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Start N ranks of a command on this node with the rendezvous environment set.",
                "Output lines are prefixed with [rank N]; when a rank fails the others are stopped and its status returned."})
final class LaunchCommand implements Callable<Integer> {
    @Option(names = "--nproc-per-node", required = true, description = "Processes (ranks) on this node.")
    int nprocPerNode;
    @Option(names = "--nnodes", defaultValue = "1", description = "Nodes in the job (default: ${DEFAULT-VALUE}).")
    int nnodes;
    @Option(names = "--node-rank", defaultValue = "0", description = "Index of this node; node 0 hosts the store (default: ${DEFAULT-VALUE}).")
    int nodeRank;
    @Option(names = "--master-addr", defaultValue = "127.0.0.1", description = "Address of node 0 (default: ${DEFAULT-VALUE}).")
    String masterAddr;
    @Option(names = "--master-port", defaultValue = "0", description = "Store port on node 0; 0 picks a free port (single node only).")
    int masterPort;
    @Option(names = "--max-restarts", defaultValue = "0", description = "Restart the whole group this many times after a failure (default: ${DEFAULT-VALUE}).")
    int maxRestarts;
    @Option(names = "--stop-grace-ms", defaultValue = "5000", description = "Time surviving ranks get to exit after SIGTERM (default: ${DEFAULT-VALUE}).")
    long stopGraceMs;
    @Parameters(arity = "1..*", paramLabel = "COMMAND", description = "The program and its arguments, after --.")
    List<String> command;

    @Override
    public Integer call() {
        var options = new LaunchOptions(nprocPerNode, nnodes, nodeRank, masterAddr, masterPort, maxRestarts, null, stopGraceMs, command);
        return new Launcher(options, System.out).run();
    }
}
