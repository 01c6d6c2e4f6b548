package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * kill -9 during an asynchronous save, in real JVMs: after a rank's shard file of step 2 is durable but before the
 * commit. The committed step 1 must still be 'latest', load and verify; step 2 must not be committed or listed as
 * latest. Once alone, once as rank 1 of a 2-process job started by the {@link Launcher}.
 */
@Timeout(120)
class CrashTest {
    @TempDir
    Path root;

    static List<String> javaCommand(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                CrashSaver.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test
    void killedDuringAnAsyncSaveLeavesThePreviousCheckpointLatestAndWhole() throws Exception {
        Process p = new ProcessBuilder(javaCommand(root.toString(), "0", "single")).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null && !line.startsWith("WRITTEN")) System.out.println("child: " + line);
            assertThat(line).as("child reached the write of step 2").startsWith("WRITTEN");
            p.destroyForcibly(); // SIGKILL
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        assertAfterCrash(1);
    }

    @Test
    void killingOneRankOfTwoDuringAnAsyncSaveCommitsNothing() throws Exception {
        CompletableFuture<Long> victim = new CompletableFuture<>();
        OutputStream watch = new OutputStream() {
            private final StringBuilder line = new StringBuilder();

            @Override
            public synchronized void write(int b) {
                if (b != '\n') {
                    line.append((char) b);
                    return;
                }
                String l = line.toString();
                line.setLength(0);
                System.out.println("job: " + l);
                int at = l.indexOf("WRITTEN pid=");
                if (at >= 0) {
                    long pid = Long.parseLong(l.substring(at + "WRITTEN pid=".length()).trim());
                    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly); // kill -9 rank 1
                    victim.complete(pid);
                }
            }
        };
        LaunchOptions o = new LaunchOptions(2, 1, 0, "127.0.0.1", 0, 0, null, 2_000, javaCommand(root.toString(), "1", "launched"));
        int status = new Launcher(o, new PrintStream(watch, true, StandardCharsets.UTF_8), Map.of("JTRAIN_TIMEOUT_MS", "20000")).run();
        assertThat(victim).isDone();
        assertThat(status).isNotZero();
        assertAfterCrash(2);
    }

    private void assertAfterCrash(int world) throws Exception {
        Path step2 = root.resolve("step-000002");
        assertThat(Files.exists(step2.resolve(GlobalPlan.fileName(world - 1)))).as("the killed rank's file of step 2 was durable").isTrue();
        assertThat(CheckpointDirectory.isCommitted(step2)).isFalse();
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000001"));
        assertThat(CheckpointInspector.verify(root.resolve("step-000001")).problems()).isEmpty();
        ArrayState s = new ArrayState().whole("w", true, 1 << 20).whole("m", false, 1 << 20).fill(9);
        try (Checkpointer c = new Checkpointer(null)) {
            LoadReport r = c.load(root, Map.of("model", s), LoadOptions.latest());
            assertThat(r.step()).isEqualTo(1);
            assertThat(s.check(1)).isNull();
            assertThatThrownBy(() -> c.load(step2, Map.of("model", s), LoadOptions.latest()))
                    .isInstanceOf(CheckpointException.class).hasMessageContaining("not committed");
        }
    }
}
