package dev.jtrain.cli.hosts;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Several hosts on this machine, for tests: a Java handle on {@code test/hosts/hosts.sh} (network namespaces
 * {@code jt-h1..N} with host names {@code jt-node1..N} and addresses {@code 10.231.0.K}, joined through a bridge,
 * links shaped with tbf). {@link #close} tears everything down, also when the test failed.
 *
 * <p>When the harness cannot run here (not root, no namespaces, a package missing), {@link #start} aborts the test
 * with the harness's reason, printed to stderr, so that a run shows it as skipped and says why. Under CI
 * ({@code CI=true}) the same condition fails the test instead: CI runs as root and installs what the harness
 * needs, so a skip there would hide a broken set-up.
 */
public final class EmulatedHosts implements AutoCloseable {
    static final Path REPO = Path.of(System.getProperty("jtrain.repo", ".")).toAbsolutePath().normalize();
    static final Path HOSTS_SH = REPO.resolve("test/hosts/hosts.sh");

    private final int n;
    private boolean closed;

    private EmulatedHosts(int n) { this.n = n; }

    /** Brings up {@code n} hosts, each link shaped to {@code rate} (tc syntax, e.g. {@code 2gbit}; null: unshaped). */
    public static EmulatedHosts start(int n, String rate) {
        requireAvailable(HOSTS_SH, "check");
        EmulatedHosts h = new EmulatedHosts(n);
        List<String> cmd = new ArrayList<>(List.of(HOSTS_SH.toString(), "up", Integer.toString(n)));
        if (rate != null) cmd.add(rate);
        try {
            run(cmd, Duration.ofSeconds(120), true);
        } catch (RuntimeException e) {
            h.close();
            throw e;
        }
        return h;
    }

    /**
     * Runs {@code script args} and, when it exits non-zero, skips the test with its output as the reason (or fails
     * it under CI).
     */
    static void requireAvailable(Path script, String... args) {
        List<String> cmd = new ArrayList<>(List.of(script.toString()));
        cmd.addAll(List.of(args));
        Result r = run(cmd, Duration.ofSeconds(60), false);
        if (r.status() == 0) return;
        String reason = "emulated hosts unavailable (" + String.join(" ", cmd) + "): " + r.output().strip();
        System.err.println("SKIPPED: " + reason);
        if ("true".equalsIgnoreCase(System.getenv("CI"))) Assertions.fail("CI must run the multi-host tests: " + reason);
        Assumptions.abort(reason);
    }

    public int size() { return n; }

    /** {@code 10.231.0.K}. */
    public static String address(int host) { return "10.231.0." + host; }

    public static String hostName(int host) { return "jt-node" + host; }

    /** The command line that runs {@code cmd} on host {@code host}. */
    public List<String> on(int host, List<String> cmd) {
        List<String> c = new ArrayList<>(List.of(HOSTS_SH.toString(), "exec", Integer.toString(host)));
        c.addAll(cmd);
        return c;
    }

    /** Starts {@code cmd} on {@code host} with {@code env} added, output (both streams) to {@code log}. */
    public Process start(int host, List<String> cmd, Map<String, String> env, Path log) {
        ProcessBuilder pb = new ProcessBuilder(on(host, cmd)).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        try {
            return pb.start();
        } catch (IOException e) {
            throw new IllegalStateException("could not start " + cmd + " on host " + host, e);
        }
    }

    /** {@code hosts.sh kill K SIGNAL}: every job process on host K ({@code --all}: Slurm's daemons too). */
    public void kill(int host, String signal, boolean all) {
        List<String> c = new ArrayList<>(List.of(HOSTS_SH.toString(), "kill", Integer.toString(host), signal));
        if (all) c.add("--all");
        run(c, Duration.ofSeconds(30), true);
    }

    /** {@code hosts.sh link K down|up|blackhole}. */
    public void link(int host, String state) {
        run(List.of(HOSTS_SH.toString(), "link", Integer.toString(host), state), Duration.ofSeconds(30), true);
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        run(List.of(HOSTS_SH.toString(), "down"), Duration.ofSeconds(120), true);
    }

    /** What a finished command printed (stdout and stderr together) and its status. */
    public record Result(int status, String output) { }

    /** Runs {@code cmd} to the end within {@code timeout}; {@code check}: a non-zero status throws with the output. */
    public static Result run(List<String> cmd, Duration timeout, boolean check) {
        try {
            Path out = Files.createTempFile("jtrain-hosts", ".log");
            try {
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
                if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                    throw new IllegalStateException(cmd + " did not finish within " + timeout + ":\n" + Files.readString(out));
                }
                String text = Files.readString(out, StandardCharsets.UTF_8);
                if (check && p.exitValue() != 0) throw new IllegalStateException(cmd + " exited " + p.exitValue() + ":\n" + text);
                return new Result(p.exitValue(), text);
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            throw new IllegalStateException("could not run " + cmd, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + cmd, e);
        }
    }
}
