package dev.jtrain.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs a jtrain command in this JVM, asserts it exits 0, and returns what it printed. */
final class CliRunner {
    private CliRunner() {}

    static String run(String... args) {
        Result r = exec(args);
        assertThat(r.code()).as("exit code of jtrain %s\n%s", String.join(" ", args), r.out()).isZero();
        return r.out();
    }

    /** What a command printed to standard output, and its exit code. */
    record Result(int code, String out) { }

    /** Runs a jtrain command in this JVM whatever its exit code. */
    static Result exec(String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        int code;
        try {
            code = Main.commandLine(args).execute(args);
        } finally {
            System.setOut(old);
        }
        return new Result(code, buf.toString(StandardCharsets.UTF_8));
    }
}
