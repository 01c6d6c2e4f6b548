package dev.jtrain.comm.launch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The launcher against real child JVMs. */
@Timeout(120)
class LauncherTest {
    private static String run(LaunchOptions o, int[] status) {
        var bytes = new ByteArrayOutputStream();
        try (var ps = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            status[0] = new Launcher(o, ps, Map.of(RendezvousEnv.TIMEOUT_MS, "30000")).run();
        }
        String out = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(out);
        return out;
    }

    private static LaunchOptions opts(int n, int maxRestarts, String... args) {
        return new LaunchOptions(n, 1, 0, "127.0.0.1", 0, maxRestarts, null, 2_000, JvmRanks.workerCommand(args));
    }

    @Test
    void ranksMeetThroughTheLauncherStoreAndOutputIsPrefixed() {
        int[] status = new int[1];
        String out = run(opts(2, 0, "hello"), status);
        assertThat(status[0]).isZero();
        assertThat(out).contains("[rank 0] hello from rank 0 of 2 local 0").contains("[rank 1] hello from rank 1 of 2 local 1");
    }

    @Test
    void aFailingRankStopsTheOthersAndItsStatusAndLastLinesAreReported() {
        int[] status = new int[1];
        long t0 = System.nanoTime();
        String out = run(opts(3, 0, "fail"), status);
        assertThat(status[0]).isEqualTo(3);
        assertThat((System.nanoTime() - t0) / 1e9).as("others were stopped, not waited for").isLessThan(30.0);
        assertThat(out).contains("[launcher] rank 1 failed with exit status 3")
                .contains("[launcher]   boom: simulated failure in rank 1");
    }

    /** {@link JitPolicy}: ranks sharing a node get foreground compilation through JDK_JAVA_OPTIONS, a rank alone not. */
    @Test
    void ranksSharingTheNodeAreToldToCompileInTheForeground() {
        int[] status = new int[1];
        List<String> cmd = List.of("sh", "-c", "echo \"java options: [$JDK_JAVA_OPTIONS]\"");
        String two = run(new LaunchOptions(2, 1, 0, "127.0.0.1", 0, 0, null, 1_000, cmd), status);
        assertThat(status[0]).isZero();
        assertThat(two).contains("[rank 0] java options: [-XX:-BackgroundCompilation]", "[rank 1] java options: [-XX:-BackgroundCompilation]");
        String one = run(new LaunchOptions(1, 1, 0, "127.0.0.1", 0, 0, null, 1_000, cmd), status);
        assertThat(status[0]).isZero();
        assertThat(one).contains("[rank 0] java options: []");
    }

    @Test
    void aRankKilledBySignalIsReportedWithItsSignal() {
        int[] status = new int[1];
        String script = "if [ \"$RANK\" = 1 ]; then echo dying >&2; kill -9 $$; fi; exec sleep 30";
        String out = run(new LaunchOptions(2, 1, 0, "127.0.0.1", 0, 0, null, 1_000, List.of("sh", "-c", script)), status);
        assertThat(status[0]).isEqualTo(128 + 9);
        assertThat(out).contains("rank 1 failed with exit status 137 (signal 9, SIGKILL", "out-of-memory killer").contains("[launcher]   dying");
    }

    @Test
    void stoppingARankAlsoStopsWhatItsWrapperScriptStarted() throws Exception {
        int[] status = new int[1];
        String marker = Long.toString(30_000 + System.nanoTime() % 10_000); // a unique sleep length to look for
        String script = "if [ \"$RANK\" = 1 ]; then sleep 0.3; exit 4; fi; sleep " + marker + "; echo never";
        run(new LaunchOptions(2, 1, 0, "127.0.0.1", 0, 0, null, 1_000, List.of("sh", "-c", script)), status);
        assertThat(status[0]).isEqualTo(4);
        // the kill is asynchronous: wait (bounded) for the grandchild to be gone rather than for a fixed time
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10), left;
        while ((left = ProcessHandle.allProcesses().filter(ph -> ph.info().commandLine().orElse("").contains("sleep " + marker)).count()) > 0
                && System.nanoTime() < until) {
            Thread.sleep(20); // a poll interval, not a guess at how long the kill takes
        }
        assertThat(left).as("grandchild 'sleep " + marker + "' still running 10 s after the launcher returned").isZero();
    }

    @Test
    void maxRestartsRestartsTheWholeGroupWithAFreshAttempt() {
        int[] status = new int[1];
        String out = run(opts(2, 1, "fail-first-attempt"), status);
        assertThat(status[0]).isZero();
        assertThat(out).contains("restarting the group (restart 1 of 1)").contains("[rank 0] attempt 1 ok").contains("[rank 1] attempt 1 ok");
        // the restarted ranks are told when the failure was seen and when they were started, to time their recovery
        var m = java.util.regex.Pattern.compile("attempt 1 ok; failed at (\\d+), restarted at (\\d+), now (\\d+)").matcher(out);
        assertThat(m.find()).as(out).isTrue();
        long failed = Long.parseLong(m.group(1)), restarted = Long.parseLong(m.group(2)), now = Long.parseLong(m.group(3));
        assertThat(failed).isPositive().isLessThanOrEqualTo(restarted);
        assertThat(restarted).isLessThanOrEqualTo(now);
    }

    /**
     * {@link WarmRestart}: rank 1 dies; rank 0, waiting on it, is aborted by its launcher, parks, and runs the next
     * attempt in the same JVM with that attempt's variables, while rank 1 starts as a new process. With cold restarts
     * both are new processes.
     */
    @Test
    void aSurvivingRankContinuesInItsJvmWhileALostOneStartsAnew() {
        int[] status = new int[1];
        String out = run(opts(2, 1, "warm"), status);
        assertThat(status[0]).isZero();
        assertThat(out).contains("[launcher] rank 1 failed with exit status 7", "[rank 0] aborted: rank 1 on node 0 exited with status 7",
                "[launcher] rank 0 continues in its JVM (warm restart");
        var first = java.util.regex.Pattern.compile("\\[rank 0\\] attempt 1 of rank 0 in pid (\\d+) warm, restarted at \\d+").matcher(out);
        assertThat(first.find()).as(out).isTrue();
        assertThat(out).contains("warm restart, pid " + first.group(1) + ")").containsPattern("\\[rank 1\\] attempt 1 of rank 1 in pid \\d+ cold");
        assertThat(out).doesNotContain("jtrain-rank"); // the control lines are the launcher's, not output

        String cold = run(new LaunchOptions(2, 1, 0, "127.0.0.1", 0, 1, null, 2_000, JvmRanks.workerCommand("warm"), 0, 0, false, false), status);
        assertThat(status[0]).isZero();
        assertThat(cold).doesNotContain("continues in its JVM").containsPattern("\\[rank 0\\] attempt 1 of rank 0 in pid \\d+ cold");
    }

    @Test
    void twoNodeLaunchersFormOneJobThroughNodeZerosStore() throws Exception {
        int port;
        try (var probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String token = "two-nodes-" + System.nanoTime();
        var node1Out = new ByteArrayOutputStream();
        int[] node1Status = {-1};
        Thread node1 = Thread.ofPlatform().start(() -> {
            try (var ps = new PrintStream(node1Out, true, StandardCharsets.UTF_8)) {
                var o = new LaunchOptions(2, 2, 1, "127.0.0.1", port, 0, token, 2_000, JvmRanks.workerCommand("hello"));
                node1Status[0] = new Launcher(o, ps, Map.of(RendezvousEnv.TIMEOUT_MS, "30000")).run();
            }
        });
        int[] status = new int[1];
        String out = run(new LaunchOptions(2, 2, 0, "127.0.0.1", port, 0, token, 2_000, JvmRanks.workerCommand("hello")), status);
        node1.join(60_000);
        String out1 = node1Out.toString(StandardCharsets.UTF_8);
        System.out.println(out1);
        // node 1's status is read only once its thread has ended (join orders the write before the read)
        assertThat(node1.isAlive()).as("node 1's launcher still running 60 s after node 0's ended").isFalse();
        assertThat(status[0]).isZero();
        assertThat(node1Status[0]).isZero();
        assertThat(out).contains("[rank 0] hello from rank 0 of 4 local 0").contains("[rank 1] hello from rank 1 of 4 local 1");
        assertThat(out1).contains("[rank 2] hello from rank 2 of 4 local 0").contains("[rank 3] hello from rank 3 of 4 local 1");
    }

    @Test
    void rendezvousNamesTheMissingOrInvalidVariable() {
        Map<String, String> env = new HashMap<>(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "JTRAIN_JOB_TOKEN", "t"));
        assertThatThrownBy(() -> Rendezvous.fromEnv(env)).isInstanceOf(RendezvousConfigException.class).hasMessageContaining("MASTER_PORT");
        env.put("MASTER_PORT", "70000");
        assertThatThrownBy(() -> Rendezvous.fromEnv(env)).isInstanceOf(RendezvousConfigException.class).hasMessageContaining("MASTER_PORT=70000");
        env.put("MASTER_PORT", "29500");
        env.put("RANK", "2");
        assertThatThrownBy(() -> Rendezvous.fromEnv(env)).isInstanceOf(RendezvousConfigException.class).hasMessageContaining("RANK=2");
        env.put("RANK", "x");
        assertThatThrownBy(() -> Rendezvous.fromEnv(env)).isInstanceOf(RendezvousConfigException.class).hasMessageContaining("RANK='x'");
        assertThatThrownBy(() -> new LaunchOptions(2, 2, 0, "h", 0, 0, "t", 0, List.of("x")))
                .isInstanceOf(RendezvousConfigException.class).hasMessageContaining("--master-port");
        assertThatThrownBy(() -> new LaunchOptions(2, 1, 0, "h", 0, 1, "t", 0, List.of("x"), 0, 0, true, true))
                .isInstanceOf(RendezvousConfigException.class).hasMessageContaining("--spare needs a multi-node job");
        assertThatThrownBy(() -> new LaunchOptions(2, 2, 1, "h", 9, 0, "t", 0, List.of("x"), 0, 0, true, true))
                .isInstanceOf(RendezvousConfigException.class).hasMessageContaining("--spare needs --max-restarts >= 1");
        assertThatThrownBy(() -> new LaunchOptions(2, 2, 0, "h", 9, 1, "t", 0, List.of("x"), 0, 0, true, true))
                .isInstanceOf(RendezvousConfigException.class).hasMessageContaining("can not stand in for node 0");
        assertThat(new LaunchOptions(2, 2, 1, "h", 9, 1, "t", 0, List.of("x"), 0, 0, true, true).spare()).isTrue();
    }
}
