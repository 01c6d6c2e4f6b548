package dev.jtrain.cli;

import picocli.CommandLine.Command;

/** {@code jtrain bench}: micro-benchmarks that print figures comparable with the peers'. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks (train, matmul, comm).",
        subcommands = {BenchTrainCommand.class, BenchMatmulCommand.class, BenchCommCommand.class})
final class BenchCommand {}
