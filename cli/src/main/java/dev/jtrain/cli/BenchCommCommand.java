package dev.jtrain.cli;

import dev.jtrain.comm.bench.BenchConfig;
import dev.jtrain.comm.bench.CommBenchmark;
import dev.jtrain.comm.engine.ClusterEngines;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jtrain bench comm}: times one collective over N local processes (or, started by an engine as one rank of
 * many, over the engine's ranks), printing nccl-tests-style lines (size,
 * count, algorithm, median time, algbw, busbw in GB/s and Gbit/s). Starts N JVMs through the {@link Launcher}
 * (each runs {@link CommBenchmark#main}); rank 0 writes the report, which this command prints.
 */
@Command(name = "comm", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Collective communication benchmark over N local processes (like nccl-tests).",
                "Example: jtrain bench comm --nproc 2 --op all_reduce --sizes 4K:256M"})
final class BenchCommCommand implements Callable<Integer> {
    @Option(names = "--nproc", defaultValue = "2", description = "Processes (ranks) to start (default: ${DEFAULT-VALUE}).")
    int nproc;
    @Option(names = "--op", defaultValue = "all_reduce",
            description = "all_reduce, all_gather, reduce_scatter, broadcast or all_to_all (default: ${DEFAULT-VALUE}).")
    String op;
    @Option(names = "--sizes", defaultValue = "4K:256M",
            description = "MIN:MAX[:FACTOR] (factor 4 by default) or a list 4K,64M; binary units (default: ${DEFAULT-VALUE}).")
    String sizes;
    @Option(names = "--algo", description = "Force an algorithm for this op (e.g. ring, halvingdoubling, doubletree, tree, naive, "
            + "chain, binomial, recursivedoubling, recursivehalving), or a full JTRAIN_ALGO spec like allreduce:ring.")
    String algo;
    @Option(names = "--transport", description = "auto, shm or tcp (sets JTRAIN_TRANSPORT; default: auto).")
    String transport;
    @Option(names = "--chunk-bytes", description = "Pipelining chunk of the algorithms (sets JTRAIN_CHUNK_BYTES).")
    Long chunkBytes;
    @Option(names = "--iters", defaultValue = "0", description = "Timed iterations per size; 0 = like the peer scripts (10/20/200).")
    int iters;
    @Option(names = "--warmup", defaultValue = "0", description = "Warm-up iterations per size; 0 = time-based (JIT warm-up: 5 s before the first size, 1.5 s before each other).")
    int warmup;
    @Option(names = "--json", description = "Print JSON instead of the table.")
    boolean json;

    @Override
    public Integer call() throws IOException {
        BenchConfig config = new BenchConfig(op, BenchConfig.parseSizes(sizes), iters, warmup); // validate before starting JVMs
        if (ClusterEngines.rankLayout(EngineEnv.current()).isPresent()) {
            // started as one rank of many (srun, mpirun, jtrain launch across hosts): run here; rank 0 prints. The
            // algorithm, transport and chunk flags apply only when this command starts the ranks itself: the group
            // was configured from the environment every rank was given, so say so rather than ignore them.
            if (algo != null || transport != null || chunkBytes != null)
                throw new IllegalArgumentException("--algo, --transport and --chunk-bytes apply when bench comm starts the ranks"
                        + " itself; started by a launcher or an engine, give every rank the environment instead: JTRAIN_ALGO="
                        + config.op().replace("_", "") + ":ALGO, JTRAIN_TRANSPORT, JTRAIN_CHUNK_BYTES");
            List<String> args = new ArrayList<>(List.of("--op", config.op(), "--sizes", sizes, "--iters", Integer.toString(iters),
                    "--warmup", Integer.toString(warmup)));
            if (json) args.add("--json");
            CommBenchmark.main(args.toArray(String[]::new));
            return 0;
        }
        Path report = Files.createTempFile("jtrain-bench-comm", json ? ".json" : ".txt");
        try {
            List<String> cmd = ChildJvm.command(CommBenchmark.class.getName(), new ArrayList<>(List.of("--op", config.op(),
                    "--sizes", sizes, "--iters", Integer.toString(iters), "--warmup", Integer.toString(warmup),
                    "--report-file", report.toString())));
            if (json) cmd.add("--json");
            Map<String, String> env = new HashMap<>();
            env.put("JTRAIN_TRANSPORT", transport == null ? "auto" : transport);
            if (algo != null) env.put("JTRAIN_ALGO", algo.contains(":") ? algo : config.op().replace("_", "") + ":" + algo);
            if (chunkBytes != null) env.put("JTRAIN_CHUNK_BYTES", Long.toString(chunkBytes));
            var options = new LaunchOptions(nproc, 1, 0, "127.0.0.1", 0, 0, null, 0, cmd);
            int status = new Launcher(options, System.err, env).run();
            if (status != 0) return status;
            System.out.print(Files.readString(report, StandardCharsets.UTF_8));
            return 0;
        } finally {
            Files.deleteIfExists(report);
        }
    }
}
