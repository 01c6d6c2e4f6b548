package dev.jtrain.cli;

import dev.jtrain.comm.engine.NodeLayout;
import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;

import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code jtrain train --nproc N}: re-runs the same command as N worker JVMs through the {@link Launcher} (which sets
 * RANK, WORLD_SIZE, MASTER_ADDR... like torchrun), giving each worker cores/N kernel threads unless --threads says
 * otherwise, and one shared run directory.
 */
final class MultiProcess {
    private MultiProcess() {}

    /** {@code node}: this node's place when an engine started one process per node (Kubernetes), else null. */
    static int launch(int nproc, Integer threads, List<String> originalArgs, Path out, NodeLayout node) {
        List<String> cmd = ChildJvm.command(Main.class.getName(), originalArgs, nproc); // the whole command line, "train" included
        if (out == null) {
            cmd.add("--out");
            cmd.add(Path.of("runs", LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))).toString());
        }
        int perRank = threads != null ? threads : Math.max(1, Runtime.getRuntime().availableProcessors() / nproc);
        LaunchOptions options = node == null ? new LaunchOptions(nproc, 1, 0, "127.0.0.1", 0, 0, null, 5_000, cmd)
                : new LaunchOptions(nproc, node.nnodes(), node.nodeRank(), node.masterAddr(), node.masterPort(), 0,
                node.jobToken(), 5_000, cmd);
        return new Launcher(options, System.out, Map.of("JTRAIN_THREADS", Integer.toString(perRank))).run();
    }
}
