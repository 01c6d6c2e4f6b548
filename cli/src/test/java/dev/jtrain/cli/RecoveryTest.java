package dev.jtrain.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rank killed with SIGKILL mid-run under {@code jtrain launch --max-restarts 1}: the launcher restarts the group, the
 * ranks resume from the newest checkpoint, finish the run, and report the recovery phase by phase (console and
 * metrics.jsonl, which keeps the failed attempt's steps). The surviving rank continues in its JVM (a warm restart).
 */
@Timeout(300)
class RecoveryTest {
    @Test
    void aKilledRankIsRecoveredAndTheRecoveryIsTimedPhaseByPhase(@TempDir Path dir) throws Exception {
        Path text = dir.resolve("corpus.txt");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 3000; i++) sb.append("int f").append(i % 7).append("(int x) { return x * ").append(i % 5).append("; }\n");
        Files.writeString(text, sb);
        Path out = dir.resolve("run"), ckpt = dir.resolve("ckpt"), metrics = out.resolve("metrics.jsonl");
        List<String> train = List.of("train", "--preset", "tiny", "--data", text.toString(), "--max-steps", "40", "--peak-gflops", "50",
                "--no-progress", "--eval-interval", "0", "--sample-tokens", "0", "--ckpt-dir", ckpt.toString(), "--ckpt-every", "4",
                "--resume", "--out", out.toString());
        List<String> args = new ArrayList<>(List.of("launch", "--nproc-per-node", "2", "--max-restarts", "1", "--stop-grace-ms", "2000", "--"));
        args.addAll(ChildJvm.command(Main.class.getName(), train));

        AtomicReference<String> log = new AtomicReference<>();
        Thread job = Thread.ofPlatform().start(() -> log.set(CliRunner.exec(args.toArray(String[]::new)).out()));
        // once step 9 is logged (a checkpoint at step 8 is committed by then, or about to be), kill a rank
        long deadline = System.nanoTime() + 240_000_000_000L;
        while (MetricsLog.lastStep(metrics) < 9 && System.nanoTime() < deadline) Thread.sleep(50);
        assertThat(MetricsLog.lastStep(metrics)).as("the run got to step 9").isGreaterThanOrEqualTo(9);
        ProcessHandle victim = ProcessHandle.current().descendants().filter(p -> p.info().command().orElse("").endsWith("java"))
                .max(Comparator.comparingLong(ProcessHandle::pid)).orElseThrow();
        victim.destroyForcibly();
        job.join(240_000);
        String s = log.get();
        assertThat(s).as("the launcher returned").isNotNull();
        s.lines().filter(l -> l.contains("recovery (restart") || l.contains("[launcher]")).forEach(System.out::println);
        assertThat(s).contains("restarting the group (restart 1 of 1)").containsPattern(
                "recovery \\(restart 1\\): failure seen -> group restarted [0-9.]+ s -> up, state loaded [0-9.]+ s \\(warm, in its JVM: restart received"
                        + " [0-9.]+, startup and process group [0-9.]+, data, model and strategy [0-9.]+, state [0-9.]+\\) -> first step done"
                        + " [0-9.]+ s; [0-9.]+ s from failure to the next finished step; resumed at step \\d+ from disk, \\d+ step\\(s\\) recomputed");

        // the killed rank starts anew; the lead rank, which survived, continues in its JVM
        assertThat(s).contains("[launcher] rank 0 continues in its JVM (warm restart, pid");

        ObjectMapper json = new ObjectMapper();
        List<JsonNode> records = new ArrayList<>();
        for (String l : Files.readAllLines(metrics)) records.add(json.readTree(l));
        JsonNode recovery = records.stream().filter(r -> r.get("type").asText().equals("recovery")).findFirst().orElseThrow();
        long resumed = recovery.get("resumed_step").asLong();
        assertThat(resumed).as("resumed from a checkpoint").isPositive();
        assertThat(resumed % 4).isZero();
        assertThat(recovery.get("warm").asBoolean()).as("the lead rank's attempt ran in its JVM").isTrue();
        assertThat(recovery.get("steps_recomputed").asLong()).isBetween(0L, 4L + 1);
        for (String phase : List.of("restart_s", "load_s", "first_step_s")) assertThat(recovery.get(phase).asDouble()).as(phase).isNotNegative();
        // "up, state loaded" split into the restart message's arrival, startup and process group, data/model/strategy and the state load
        double parts = 0;
        for (String part : List.of("load_jvm_s", "load_group_s", "load_build_s", "load_state_s")) {
            assertThat(recovery.get(part).asDouble()).as(part).isNotNegative();
            parts += recovery.get(part).asDouble();
        }
        assertThat(parts).isCloseTo(recovery.get("load_s").asDouble(), org.assertj.core.api.Assertions.within(0.005));
        assertThat(recovery.get("load_group_s").asDouble()).as("rendezvous and transports take time").isPositive();
        assertThat(recovery.get("load_state_s").asDouble()).as("the checkpoint load takes time").isPositive();
        assertThat(recovery.get("total_s").asDouble()).isPositive();
        // the failed attempt's steps are kept, and the run finished
        assertThat(records.stream().filter(r -> r.get("type").asText().equals("step")).mapToLong(r -> r.get("step").asLong()).max().orElse(-1))
                .isEqualTo(39);
        assertThat(records.indexOf(recovery)).as("recovery comes after the failed attempt's steps").isGreaterThan(5);
    }
}
