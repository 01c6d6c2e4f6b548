package dev.jtrain.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.jtrain.comm.launch.CpuBinding;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

@Timeout(300)
class CliTest {
    private static String run(String... args) {
        return CliRunner.run(args);
    }

    /** The main job's path end to end on a small text: learns, writes metrics, plot, HF weights, sample. */
    @Test
    void trainWritesMetricsPlotWeightsAndSample(@TempDir Path dir) throws Exception {
        Path text = corpus(dir);
        Path out = dir.resolve("run");
        String log = run("train", "--preset", "tiny", "--data", text.toString(), "--max-steps", "40", "--out", out.toString(),
                "--peak-gflops", "50", "--no-progress", "--eval-interval", "20");
        List<JsonNode> evals = Files.readAllLines(out.resolve("metrics.jsonl")).stream().map(CliTest::json)
                .filter(n -> n.get("type").asText().equals("eval")).toList();
        assertThat(evals).hasSizeGreaterThanOrEqualTo(2);
        double unigram = Double.parseDouble(log.replaceAll("(?s).*unigram entropy of the data: ([0-9.]+).*", "$1"));
        assertThat(evals.getLast().get("valLoss").asDouble()).isLessThan(unigram * 0.8);
        assertThat(Files.size(out.resolve("loss.png"))).isGreaterThan(1000);
        assertThat(out.resolve("model.safetensors")).exists();
        assertThat(out.resolve("config.json")).exists();
        assertThat(Files.readString(out.resolve("sample.txt"))).startsWith("public ");
    }

    /**
     * {@code --zero 3} end to end through the trainer, on 2 processes, with bf16, activation checkpointing and disk
     * checkpoints: half of DDP's bytes per parameter, peak RSS reported, the model gathered back for the weights file
     * and the sample, and a second run resumes from the ZeRO-3 checkpoint.
     */
    @Test
    void zero3TrainsChecksMemoryAndResumes(@TempDir Path dir) throws Exception {
        Path text = corpus(dir), ckpt = dir.resolve("ckpt");
        String[] common = {"train", "--preset", "tiny", "--data", text.toString(), "--nproc", "2", "--threads", "1", "--zero", "3",
                "--precision", "bf16", "--activation-checkpointing", "--ckpt-dir", ckpt.toString(), "--ckpt-every", "2",
                "--peak-gflops", "50", "--no-progress", "--eval-interval", "0", "--sample-tokens", "8"};
        String first = run(concat(common, "--max-steps", "4", "--out", dir.resolve("a").toString()));
        assertThat(first).contains("ZeRO-3", "memory per rank, predicted: ZeRO-3 on 2 rank(s)", "= 8.00 B/param", "peak RSS per rank");
        // ranks sharing a host bind to their own CPUs by default, where the host has a CPU per rank and nobody bound us
        CpuBinding.planFor(0, 2).ifPresentOrElse(cpus -> assertThat(first).contains("rank 0 bound to CPUs " + CpuBinding.format(cpus)),
                () -> System.err.println("CliTest: binding not checked: fewer than 2 CPUs, or this JVM is already bound (taskset/srun)"));
        assertThat(dir.resolve("a").resolve("model.safetensors")).exists();
        assertThat(Files.readString(dir.resolve("a").resolve("sample.txt"))).isNotEmpty();
        String second = run(concat(common, "--max-steps", "6", "--resume", "--out", dir.resolve("b").toString()));
        assertThat(second).contains("resumed from", "at step 4");
    }

    /**
     * {@code --resume} builds the model without drawing its weights (a checkpoint would overwrite them); with nothing to
     * resume from it draws them after all, so the run is bitwise the same as one without {@code --resume}: on one
     * process, and with ZeRO-2 on two, where the strategy has already taken the parameters into its flat buffer.
     */
    @ParameterizedTest(name = "{0} process(es), ZeRO-{1}")
    @CsvSource({"1,0", "2,2"})
    void resumeWithNothingToResumeTrainsAsAFreshRun(int nproc, int zero, @TempDir Path dir) throws Exception {
        Path text = corpus(dir);
        String[] common = {"train", "--preset", "tiny", "--data", text.toString(), "--nproc", Integer.toString(nproc), "--threads", "1",
                "--zero", Integer.toString(zero), "--ckpt-dir", dir.resolve("ckpt").toString(), "--max-steps", "2",
                "--peak-gflops", "50", "--no-progress", "--eval-interval", "0", "--sample-tokens", "0"};
        run(concat(common, "--out", dir.resolve("fresh").toString()));
        String resumed = run(concat(common, "--resume", "--out", dir.resolve("resumed").toString()));
        assertThat(resumed).contains("no committed checkpoint", "starting from step 0");
        assertThat(dir.resolve("resumed").resolve("model.safetensors")).hasSameBinaryContentAs(dir.resolve("fresh").resolve("model.safetensors"));
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** {@code --precision bf16}: says how bf16 matmuls run here, trains, learns, and writes fp32 weights. */
    @Test
    void trainInBf16SaysHowAndLearns(@TempDir Path dir) throws Exception {
        Path text = corpus(dir);
        Path out = dir.resolve("run");
        String log = run("train", "--preset", "tiny", "--data", text.toString(), "--max-steps", "40", "--out", out.toString(),
                "--peak-gflops", "50", "--no-progress", "--eval-interval", "20", "--precision", "bf16", "--sample-tokens", "0");
        assertThat(log).contains("bf16 matmuls: ", "bf16 matmuls, fp32 master weights");
        List<JsonNode> evals = Files.readAllLines(out.resolve("metrics.jsonl")).stream().map(CliTest::json)
                .filter(n -> n.get("type").asText().equals("eval")).toList();
        double unigram = Double.parseDouble(log.replaceAll("(?s).*unigram entropy of the data: ([0-9.]+).*", "$1"));
        assertThat(evals.getLast().get("valLoss").asDouble()).isLessThan(unigram * 0.8);
        assertThat(out.resolve("model.safetensors")).exists();
        assertThatThrownByRun("train", "--preset", "tiny", "--precision", "fp16");
    }

    /**
     * A model too large for any strategy on the ranks given is refused before it is built, naming the predicted
     * figure and what each rank can use.
     */
    @Test
    void aRunThatWillNotFitIsRefusedBeforeTheModelIsBuilt() {
        String[] big = {"train", "--preset", "tiny", "--n-layer", "48", "--n-head", "32", "--n-embd", "4096", "--data-max-bytes", "100000",
                "--max-steps", "1", "--no-progress"};
        long t0 = System.nanoTime();
        String err = stderrOf(big);
        assertThat(err).contains("this run will not fit: one process on 1 rank(s)", "GiB per rank", "each rank can use",
                "No ZeRO stage fits on 1 rank(s)");
        assertThat((System.nanoTime() - t0) / 1e9).as("refused before 9.7B parameters were allocated").isLessThan(30);
    }

    private static String stderrOf(String... args) {
        java.io.PrintStream old = System.err;
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
        CliRunner.Result r;
        try {
            r = CliRunner.exec(args);
        } finally {
            System.setErr(old);
        }
        assertThat(r.code()).isNotZero();
        return err.toString(java.nio.charset.StandardCharsets.UTF_8) + r.out();
    }

    /** A bad value fails at once with a message naming it (on stderr), not after data preparation. */
    private static void assertThatThrownByRun(String... args) {
        assertThat(stderrOf(args)).contains("precision must be fp32 or bf16, got 'fp16'");
    }

    /** jtrain eval on the committed PyTorch parity model and tokens gives PyTorch's loss (4.488437885 in float64), and in bf16 autocast's. */
    @Test
    void evalMatchesThePyTorchLoss() throws Exception {
        Path parity = Path.of(CliTest.class.getResource("/parity/tiny_gpt2.safetensors").toURI()).getParent();
        String out = run("eval", "--init-from", parity.resolve("tiny_gpt2.safetensors").toString(),
                "--data", parity.resolve("tiny_tokens.bin").toString(), "--batch", "2", "--block", "16", "--json");
        JsonNode j = json(out.lines().filter(l -> l.startsWith("{")).findFirst().orElseThrow());
        assertThat(j.get("loss").asDouble()).isCloseTo(4.488437885, org.assertj.core.api.Assertions.within(1e-5));

        // in bf16: near PyTorch autocast's 4.487759 (make_autocast_reference.py), and not the fp32 loss
        String bf16 = run("eval", "--init-from", parity.resolve("tiny_gpt2.safetensors").toString(),
                "--data", parity.resolve("tiny_tokens.bin").toString(), "--batch", "2", "--block", "16", "--json", "--precision", "bf16");
        JsonNode b = json(bf16.lines().filter(l -> l.startsWith("{")).findFirst().orElseThrow());
        assertThat(b.get("precision").asText()).isEqualTo("bf16");
        assertThat(b.get("loss").asDouble()).isCloseTo(4.487759, org.assertj.core.api.Assertions.within(5e-3));
        assertThat(Math.abs(b.get("loss").asDouble() - 4.488437885)).isGreaterThan(1e-5);
    }

    /** A small, very regular Java-like text to train on. */
    private static Path corpus(Path dir) throws java.io.IOException {
        Path text = dir.resolve("corpus.txt");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 4000; i++) sb.append("public static int add").append(i % 10).append("(int a, int b) { return a + b; }\n");
        return Files.writeString(text, sb);
    }

    private static JsonNode json(String line) {
        try {
            return new ObjectMapper().readTree(line);
        } catch (Exception e) {
            throw new IllegalStateException(line, e);
        }
    }
}
