package dev.jtrain.cli;

import dev.jtrain.comm.bench.Topology;
import dev.jtrain.comm.engine.ClusterEngines;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jtrain topo}: the rank x rank link matrix (kind, latency, bandwidth, host boundaries) and the measured
 * cost model per link class. Alone it starts N local ranks; started by an engine ({@code srun jtrain topo},
 * {@code mpirun ... jtrain topo}) each process is a rank and rank 0 prints the table.
 */
@Command(name = "topo", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Rank x rank matrix of link kinds with measured latency and bandwidth (like nvidia-smi topo -m).")
final class TopoCommand implements Callable<Integer> {
    @Option(names = "--nproc", defaultValue = "2", description = "Processes (ranks) to start (default: ${DEFAULT-VALUE}).")
    int nproc;
    @Option(names = "--transport", defaultValue = "auto", description = "auto, shm or tcp (default: ${DEFAULT-VALUE}).")
    String transport;

    @Override
    public Integer call() throws Exception {
        if (nproc < 1) throw new IllegalArgumentException("--nproc must be >= 1, got " + nproc);
        if (!List.of("auto", "shm", "tcp").contains(transport.toLowerCase(Locale.ROOT)))
            throw new IllegalArgumentException("--transport must be auto, shm or tcp, got " + transport);
        if (ClusterEngines.rankLayout(EngineEnv.current()).isPresent()) {
            // started as one rank of many (srun, mpirun, jtrain launch): measure in this process; rank 0 prints
            Topology.main(new String[0]);
            return 0;
        }
        Path report = Files.createTempFile("jtrain-topo", ".txt");
        try {
            List<String> cmd = ChildJvm.command(Topology.class.getName(), List.of("--report-file", report.toString()));
            int status = new Launcher(new LaunchOptions(nproc, 1, 0, "127.0.0.1", 0, 0, null, 0, cmd), System.err,
                    Map.of("JTRAIN_TRANSPORT", transport)).run();
            if (status != 0) return status;
            System.out.print(Files.readString(report, StandardCharsets.UTF_8));
            return 0;
        } finally {
            Files.deleteIfExists(report);
        }
    }
}
