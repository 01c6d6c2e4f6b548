package dev.jtrain.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One rank's child JVM: started with the rendezvous variables, its output relayed line by line with a
 * {@code [rank N]} prefix (so executor logs read like {@code jtrain launch}'s), and stopped with the task: when the
 * task is interrupted (Spark cancels the other tasks of a failed barrier stage) the child gets SIGTERM, which makes
 * jtrain checkpoint and exit, then SIGKILL after a grace period.
 */
final class RankProcess {
    static final long GRACE_MS = 10_000;
    static final int TAIL_LINES = 20;

    private RankProcess() { }

    /** Outcome of a finished child. */
    record Result(int exitCode, List<String> tail) {
        String lastLine() { return tail.isEmpty() ? "" : tail.get(tail.size() - 1); }
    }

    static Result run(List<String> command, Map<String, String> env, int rank, PrintStream log) throws InterruptedException, IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        Thread reaper = new Thread(() -> stop(p), "jtrain-rank-" + rank + "-reaper");
        Runtime.getRuntime().addShutdownHook(reaper);
        Deque<String> tail = new ArrayDeque<>();
        Thread relay = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    log.println("[rank " + rank + "] " + line);
                    synchronized (tail) {
                        if (tail.size() == TAIL_LINES) tail.removeFirst();
                        tail.addLast(line);
                    }
                }
            } catch (IOException ignored) {
                // the child is gone; its exit code says how
            }
        }, "jtrain-rank-" + rank + "-output");
        relay.setDaemon(true);
        relay.start();
        try {
            int code = p.waitFor();
            relay.join(5_000);
            synchronized (tail) {
                return new Result(code, new ArrayList<>(tail));
            }
        } catch (InterruptedException e) {
            stop(p);
            throw e;
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(reaper);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or about to: it stops the child
            }
        }
    }

    private static void stop(Process p) {
        if (!p.isAlive()) return;
        p.destroy(); // SIGTERM: jtrain's preemption path saves a checkpoint, then exits
        try {
            if (!p.waitFor(GRACE_MS, TimeUnit.MILLISECONDS)) p.destroyForcibly();
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
