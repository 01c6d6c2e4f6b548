package dev.jtrain.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checkpointing through the real command in real JVMs: {@code jtrain train --nproc 2 --zero 1 --ckpt-every 3}, then a
 * second job that {@code --resume}s from step 3 must log the same losses for steps 3..5 and write the same model, bit
 * for bit; then {@code jtrain ckpt ls | verify | consolidate} and {@code eval --init-from} on the consolidated file.
 */
@Timeout(300)
class CkptCommandTest {
    private static String run(String... args) {
        return CliRunner.run(args);
    }

    private static List<String> losses(Path metrics, int fromStep) throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<String> out = new ArrayList<>();
        for (String l : Files.readAllLines(metrics)) {
            JsonNode n = json.readTree(l);
            if (n.get("type").asText().equals("step") && n.get("step").asInt() >= fromStep) out.add(n.get("step") + ":" + n.get("loss").asText());
        }
        return out;
    }

    @Test
    void twoProcessTrainingResumesBitwiseAndTheCheckpointToolsWork(@TempDir Path dir) throws Exception {
        Path text = dir.resolve("corpus.txt");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 3000; i++) sb.append("int f").append(i % 7).append("(int x) { return x * ").append(i % 5).append("; }\n");
        Files.writeString(text, sb);
        Path ckpt = dir.resolve("ckpt");
        List<String> common = List.of("train", "--preset", "tiny", "--data", text.toString(), "--max-steps", "6", "--nproc", "2",
                "--zero", "1", "--peak-gflops", "50", "--no-progress", "--eval-interval", "0", "--sample-tokens", "0",
                "--ckpt-dir", ckpt.toString(), "--ckpt-every", "3");
        List<String> a = new ArrayList<>(common);
        a.addAll(List.of("--out", dir.resolve("a").toString(), "--async-ckpt"));
        run(a.toArray(String[]::new));
        assertThat(run("ckpt", "ls", ckpt.toString())).contains("step-000003").contains("step-000006").contains("<- latest");

        // the newest checkpoint rots on disk (a flipped byte in rank 1's shard): --resume passes over it, says why, sets
        // it aside, and continues from step 3 in a fresh job
        Path rotten = ckpt.resolve("step-000006/rank-00001.safetensors");
        try (var f = new java.io.RandomAccessFile(rotten.toFile(), "rw")) {
            f.seek(f.length() - 1);
            int b = f.read();
            f.seek(f.length() - 1);
            f.write(b ^ 0x10);
        }
        byte[] rottenBytes = Files.readAllBytes(rotten);
        List<String> b = new ArrayList<>(common);
        b.addAll(List.of("--out", dir.resolve("b").toString(), "--resume"));
        assertThat(run(b.toArray(String[]::new))).contains("skipped checkpoint step-000006", "CRC32C", "rank-00001.safetensors",
                "set aside as step-000006.unusable").contains("resumed from").contains("at step 3");
        assertThat(Files.readAllBytes(ckpt.resolve("step-000006.unusable/rank-00001.safetensors"))).isEqualTo(rottenBytes);
        assertThat(run("ckpt", "ls", ckpt.toString())).contains("step-000006.unusable", "SET ASIDE");

        assertThat(losses(dir.resolve("b/metrics.jsonl"), 0)).hasSize(3).isEqualTo(losses(dir.resolve("a/metrics.jsonl"), 3));
        assertThat(Files.readAllBytes(dir.resolve("b/model.safetensors"))).isEqualTo(Files.readAllBytes(dir.resolve("a/model.safetensors")));

        assertThat(run("ckpt", "verify", ckpt.toString())).startsWith("OK");
        verifyFindsEachKindOfDamage(ckpt.resolve("step-000006"), dir.resolve("damaged"));
        assertThat(run("ckpt", "inspect", ckpt.toString())).contains("optimizer.step=6").contains("model/transformer.wte.weight");
        Path cons = dir.resolve("cons/model.safetensors");
        run("ckpt", "consolidate", ckpt.toString(), "--out", cons.toString());
        assertThat(Files.readAllBytes(cons)).isEqualTo(Files.readAllBytes(dir.resolve("a/model.safetensors")));
        assertThat(run("eval", "--init-from", cons.toString(), "--data", text.toString(), "--tokenizer", "byte", "--batch", "1",
                "--block", "16")).contains("loss");
    }

    /**
     * {@code ckpt verify} on damaged copies of a good checkpoint: a flipped payload byte, a truncated shard file and
     * a missing shard file each exit non-zero and name the file and the tensor (the original stays untouched).
     */
    private static void verifyFindsEachKindOfDamage(Path good, Path scratch) throws Exception {
        Path shard = good.resolve("rank-00001.safetensors");
        long size = Files.size(shard);
        String tensor;
        try (var r = dev.jtrain.tensor.io.SafetensorsReader.open(shard)) {
            tensor = r.names().getLast(); // the last tensor's bytes end the file
        }

        Path flipped = copy(good, scratch.resolve("flipped"));
        try (var f = new java.io.RandomAccessFile(flipped.resolve("rank-00001.safetensors").toFile(), "rw")) {
            f.seek(size - 3);
            int b = f.read();
            f.seek(size - 3);
            f.write(b ^ 0x10);
        }
        CliRunner.Result r = CliRunner.exec("ckpt", "verify", flipped.toString());
        assertThat(r.code()).as(r.out()).isEqualTo(1);
        assertThat(r.out()).startsWith("CORRUPT").contains("rank-00001.safetensors").contains(tensor).contains("CRC32C");

        Path truncated = copy(good, scratch.resolve("truncated"));
        try (var ch = java.nio.channels.FileChannel.open(truncated.resolve("rank-00001.safetensors"), java.nio.file.StandardOpenOption.WRITE)) {
            ch.truncate(size - 100);
        }
        r = CliRunner.exec("ckpt", "verify", truncated.toString());
        assertThat(r.code()).as(r.out()).isEqualTo(1);
        assertThat(r.out()).startsWith("CORRUPT").contains("rank-00001.safetensors").contains(tensor);

        Path missing = copy(good, scratch.resolve("missing"));
        Files.delete(missing.resolve("rank-00001.safetensors"));
        r = CliRunner.exec("ckpt", "verify", missing.toString());
        assertThat(r.code()).as(r.out()).isEqualTo(1);
        assertThat(r.out()).startsWith("CORRUPT").contains("rank-00001.safetensors").contains(tensor);

        assertThat(run("ckpt", "verify", good.toString())).startsWith("OK");
    }

    private static Path copy(Path dir, Path to) throws Exception {
        Files.createDirectories(to);
        try (var s = Files.list(dir)) {
            for (Path p : s.toList()) Files.copy(p, to.resolve(p.getFileName()));
        }
        return to;
    }
}
