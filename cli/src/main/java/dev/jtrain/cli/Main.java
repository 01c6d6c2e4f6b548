package dev.jtrain.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine;

import java.io.IOException;
import java.io.UncheckedIOException;

/** Entry point of the {@code jtrain} command. */
@Command(name = "jtrain", mixinStandardHelpOptions = true, version = "jtrain 0.1.0",
        description = "Distributed training of GPT language models on the JVM.",
        subcommands = {TrainCommand.class, EvalCommand.class, BenchCommand.class, LaunchCommand.class, CkptCommand.class, TopoCommand.class})
public final class Main {
    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new Main());
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
