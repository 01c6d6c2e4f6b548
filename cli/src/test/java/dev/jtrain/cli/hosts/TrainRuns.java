package dev.jtrain.cli.hosts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** What multi-host training tests compare: the losses a run logged and the model it wrote, and a small corpus. */
final class TrainRuns {
    private TrainRuns() {}

    /**
     * The model these tests train: {@code tiny} cut to a context of 16 and a width of 32. The emulated-host tests run
     * their JVMs with C1 only ({@link JtrainJar}), where Vector API code is not intrinsified and costs about a
     * microsecond per vector operation: a {@code tiny} step took about 1.1 s, this one 0.4 s, and the tests are about
     * orchestration (restarts, recovery, bitwise equality), which the model's size does not change.
     */
    static final List<String> MODEL = List.of("--preset", "tiny", "--block-size", "16", "--n-embd", "32");

    /**
     * The α-β-γ figures a run measured on these emulated hosts (its "link figures" line), pinned through
     * {@code JTRAIN_LINK_COSTS} so that a job's group starts without its probe: about 2 s less per job start in C1
     * JVMs. {@code SlurmIT}'s plain {@code srun} test keeps measuring.
     */
    static final String LINK_COSTS = "intra: alpha=3.1us beta=2.213GB/s gamma=4.241GB/s chunk=32768KiB; "
            + "inter: alpha=78.6us beta=0.874GB/s gamma=5.041GB/s chunk=32768KiB";

    /** {@code step:loss} of every step in {@code run/metrics.jsonl} from {@code fromStep} on. */
    static List<String> losses(Path run, int fromStep) throws IOException {
        ObjectMapper json = new ObjectMapper();
        List<String> out = new ArrayList<>();
        for (String l : Files.readAllLines(run.resolve("metrics.jsonl"))) {
            JsonNode n = json.readTree(l);
            if (n.get("type").asText().equals("step") && n.get("step").asInt() >= fromStep) out.add(n.get("step") + ":" + n.get("loss").asText());
        }
        return out;
    }

    static byte[] model(Path run) throws IOException { return Files.readAllBytes(run.resolve("model.safetensors")); }

    /** A corpus small enough to tokenize in a moment, the same in every run. */
    static Path corpus(Path dir) throws IOException {
        Path text = dir.resolve("corpus.txt");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 4000; i++) sb.append("int f").append(i % 7).append("(int x) { return x * ").append(i % 5).append("; }\n");
        Files.writeString(text, sb);
        return text;
    }

    /** Forgets the checkpoints after {@code step} and points {@code latest} at it, as if the job had died there. */
    static void rollBack(Path ckpt, int step) throws IOException {
        try (var dirs = Files.list(ckpt)) {
            for (Path d : dirs.filter(p -> p.getFileName().toString().startsWith("step-")).toList()) {
                if (Integer.parseInt(d.getFileName().toString().substring(5)) <= step) continue;
                try (var s = Files.walk(d)) {
                    for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
                }
            }
        }
        Files.writeString(ckpt.resolve("latest"), "step-%06d%n".formatted(step));
    }

    /** Waits until {@code run/metrics.jsonl} has {@code steps} step records; fails early if {@code p} exits first. */
    static void waitForSteps(Path run, int steps, Path log, Process p) throws Exception {
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(180);
        Path metrics = run.resolve("metrics.jsonl");
        while (System.nanoTime() < until && p.isAlive()) {
            if (Files.exists(metrics) && Files.readAllLines(metrics).stream().filter(l -> l.contains("\"type\":\"step\"")).count() >= steps) return;
            Thread.sleep(100);
        }
        throw new AssertionError("training did not reach step " + steps + ":\n" + Files.readString(log));
    }

    /** Waits until {@code log} holds {@code line}; fails when {@code p} exits first or after 180 s. */
    static void waitForLine(Path log, String line, Process p) throws Exception {
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(180);
        while (System.nanoTime() < until && p.isAlive()) {
            if (Files.exists(log) && Files.readString(log).contains(line)) return;
            Thread.sleep(100);
        }
        throw new AssertionError("no line '" + line + "' in " + log + ":\n" + Files.readString(log));
    }
}
