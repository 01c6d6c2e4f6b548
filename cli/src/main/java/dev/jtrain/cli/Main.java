package dev.jtrain.cli;

import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.launch.WarmRestart;
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
    static CommandLine commandLine(String[] args) { return commandLine(args, null); }

    /** As {@link #commandLine(String[])}; {@code attempt} is what {@code train} runs as (null: this process, cold). */
    private static CommandLine commandLine(String[] args, WarmRestart.Attempt attempt) {
        CommandLine cli = new CommandLine(new Main());
        Supplier<Object> only = args.length > 0 ? SUBCOMMANDS.get(args[0]) : null;
        if (only != null) cli.addSubcommand(args[0], attempt != null && args[0].equals("train") ? new TrainCommand(attempt) : only.get());
        else SUBCOMMANDS.forEach((name, make) -> cli.addSubcommand(name, make.get()));
        return cli;
    }

    public static void main(String[] args) {
        EngineEnv env = EngineEnv.current();
        if (args.length > 0 && args[0].equals("train") && WarmRestart.offered(env)) {
            // under `jtrain launch --max-restarts`: a failed attempt parks, and the next one runs in this JVM
            int status;
            try {
                status = WarmRestart.run(env, a -> execute(args, a), Main::beforePark, System.out, System.in);
            } catch (Error e) { // out of memory, a broken JVM: not one to run another attempt in; the launcher starts a new one
                e.printStackTrace();
                status = 1;
            }
            System.exit(status);
        }
        System.exit(execute(args, null));
    }

    /**
     * Between warm attempts: the failed attempt's heap and what it mapped go now, while the rank waits, not in the next
     * attempt's first steps; SIGTERM ends the process again (the attempt had made it a request to stop training).
     */
    private static void beforePark() {
        PreemptionSignal.restore();
        System.gc();
    }

    private static int execute(String[] args, WarmRestart.Attempt attempt) {
        CommandLine cli = commandLine(args, attempt);
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
        try {
            return cli.execute(args);
        } catch (ExceptionInInitializerError e) {
            // -Djtrain.* settings are validated once, when the class that holds them loads (KernelOptions): a value
            // refused there is bad input, so one line as above, not a trace
            if (!(e.getCause() instanceof IllegalArgumentException bad)) throw e;
            System.err.println("jtrain: " + bad.getMessage());
            return 2;
        }
    }
}
