package dev.jtrain.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/** Entry point of the {@code jtrain} command. */
@Command(name = "jtrain", mixinStandardHelpOptions = true, version = "jtrain 0.1.0",
        description = "Distributed training of GPT language models on the JVM.")
public final class Main {
    /** The subcommands, in the order help lists them. */
    private static final Map<String, Supplier<Object>> SUBCOMMANDS = new LinkedHashMap<>();

    static {
        SUBCOMMANDS.put("train", TrainCommand::new);
        SUBCOMMANDS.put("eval", EvalCommand::new);
        SUBCOMMANDS.put("bench", BenchCommand::new);
        SUBCOMMANDS.put("launch", LaunchCommand::new);
        SUBCOMMANDS.put("ckpt", CkptCommand::new);
        SUBCOMMANDS.put("topo", TopoCommand::new);
    }

    /**
     * The command line for {@code args}: with only the subcommand {@code args} names first, else (help, version, a
     * mistyped name) with all of them. picocli builds each command's options by reflection, which a cold JVM runs
     * interpreted, and a restarted rank pays for it on a CPU that the other restarted ranks and launcher of its host
     * share (bench/MEASUREMENTS.md, "Compile work and cold code of a restarted rank"). The parse is the same:
     * {@code jtrain train ...} still parses at the top, so usage and the original arguments keep the prefix.
     */
    static CommandLine commandLine(String[] args) {
        CommandLine cli = new CommandLine(new Main());
        Supplier<Object> only = args.length > 0 ? SUBCOMMANDS.get(args[0]) : null;
        if (only != null) cli.addSubcommand(args[0], only.get());
        else SUBCOMMANDS.forEach((name, make) -> cli.addSubcommand(name, make.get()));
        return cli;
    }

    public static void main(String[] args) {
        CommandLine cli = commandLine(args);
        cli.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            // Known user errors (bad input, files missing or unreadable): one clear line, no stack trace. Anything
            // else: full trace for a bug report.
            if (ex instanceof IllegalArgumentException || ex instanceof UncheckedIOException || ex instanceof IOException
                    || ex.getClass().getName().startsWith("dev.jtrain")) {
                cmd.getErr().println("jtrain " + cmd.getCommandName() + ": " + ex.getMessage());
                if (System.getenv("JTRAIN_TRACE") != null) ex.printStackTrace(cmd.getErr());
                return 2;
            }
            throw ex;
        });
        System.exit(cli.execute(args));
    }
}
