package dev.jtrain.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * jtrain as a Spark barrier stage, for real: Spark from Maven Central in {@code local[N]} mode, every task starting
 * the built jtrain jar as its rank.
 */
class JtrainSparkIT {
    static final List<String> CHILD_JVM = List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
            "-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-Xmx512m");
    /** One forced all-reduce algorithm, so the reduction order (and so every bit) matches the reference run. */
    static final Map<String, String> ENV = Map.of("JTRAIN_ALGO", "allreduce:ring", "JTRAIN_TIMEOUT_MS", "60000");

    static Path jar() {
        Path jar = Path.of(System.getProperty("jtrain.jar", "../cli/target/jtrain-cli.jar")).toAbsolutePath().normalize();
        if (!Files.isRegularFile(jar)) throw new IllegalStateException("jtrain jar not built: " + jar + " (integration tests run after package)");
        return jar;
    }

    static String java() { return Path.of(System.getProperty("java.home"), "bin", "java").toString(); }

    static JavaSparkContext spark(int slots) {
        return new JavaSparkContext(new SparkConf().setMaster("local[" + slots + "]").setAppName("jtrain-spark-it")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.barrier.sync.timeout", "120s")
                .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
                .set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "2"));
    }

    static List<String> trainArgs(Path out, String... more) {
        List<String> a = new ArrayList<>(List.of("train", "--preset", "tiny", "--max-steps", "4", "--warmup-steps", "2",
                "--decay-steps", "4", "--peak-gflops", "50", "--no-progress", "--eval-interval", "0", "--sample-tokens", "0",
                "--out", out.toString()));
        a.addAll(List.of(more));
        return a;
    }

    static Path corpus(Path dir) throws Exception {
        Path text = dir.resolve("corpus.txt");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 4000; i++) sb.append("int f").append(i % 7).append("(int x) { return x * ").append(i % 5).append("; }\n");
        Files.writeString(text, sb);
        return text;
    }

    /** {@code step:loss} of every step rank 0 logged. */
    static List<String> losses(Path run) throws Exception {
        Pattern step = Pattern.compile("\"type\":\"step\".*?\"step\":(\\d+).*?\"loss\":([-0-9.eE]+)");
        List<String> out = new ArrayList<>();
        for (String l : Files.readAllLines(run.resolve("metrics.jsonl"))) {
            Matcher m = step.matcher(l);
            if (m.find()) out.add(m.group(1) + ":" + m.group(2));
        }
        return out;
    }

    @Test
    @Timeout(600)
    void fourTasksTrainExactlyLikeFourProcessesOfJtrainItself(@TempDir Path dir) throws Exception {
        Path corpus = corpus(dir);
        List<String> reference = new ArrayList<>(List.of(java()));
        reference.addAll(CHILD_JVM);
        reference.addAll(List.of("-jar", jar().toString()));
        reference.addAll(trainArgs(dir.resolve("processes"), "--data", corpus.toString(), "--nproc", "4"));
        ProcessBuilder pb = new ProcessBuilder(reference).redirectErrorStream(true).redirectOutput(dir.resolve("processes.log").toFile());
        pb.environment().putAll(ENV);
        pb.environment().put("JTRAIN_JOB_TOKEN", "reference");
        Process p = pb.start();
        assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(Files.readString(dir.resolve("processes.log"))).isZero();

        SparkTrainOptions options = new SparkTrainOptions(java(), jar().toString(), CHILD_JVM,
                trainArgs(dir.resolve("spark"), "--data", corpus.toString()), "spark-it", false, ENV);
        List<RankReport> reports;
        try (JavaSparkContext sc = spark(4)) {
            reports = JtrainSpark.train(sc, 4, options);
        }
        assertThat(reports).extracting(RankReport::rank).containsExactly(0, 1, 2, 3);
        assertThat(reports).allSatisfy(r -> assertThat(r.exitCode()).isZero());
        assertThat(String.join("\n", reports.get(0).tail())).contains("4 process(es)").contains("ranks: 4 on 1 host(s)");
        assertThat(losses(dir.resolve("spark"))).hasSize(4).isEqualTo(losses(dir.resolve("processes")));
        assertThat(Files.readAllBytes(dir.resolve("spark/model.safetensors")))
                .isEqualTo(Files.readAllBytes(dir.resolve("processes/model.safetensors")));
    }

    @Test
    @Timeout(600)
    void eachRankTrainsOnItsPartitionOfAnRdd(@TempDir Path dir) throws Exception {
        List<String> lines = Files.readAllLines(corpus(dir));
        SparkTrainOptions options = new SparkTrainOptions(java(), jar().toString(), CHILD_JVM, trainArgs(dir.resolve("rdd")),
                "spark-it", true, ENV);
        List<RankReport> reports;
        List<Integer> sizes;
        try (JavaSparkContext sc = spark(2)) {
            JavaRDD<String> text = sc.parallelize(lines, 2);
            sizes = text.glom().map(List::size).collect();
            reports = JtrainSpark.train(text, options);
        }
        assertThat(reports).extracting(RankReport::lines).containsExactly((long) sizes.get(0), (long) sizes.get(1));
        assertThat(sizes.get(0) + sizes.get(1)).isEqualTo(lines.size());
        assertThat(losses(dir.resolve("rdd"))).hasSize(4);
    }

    @Test
    @Timeout(300)
    void aRankThatFailsFailsTheStageNamingItsRankAndOutput(@TempDir Path dir) throws Exception {
        SparkTrainOptions options = new SparkTrainOptions(java(), jar().toString(), CHILD_JVM,
                List.of("train", "--preset", "no-such-preset", "--out", dir.resolve("bad").toString()), "spark-it", false, ENV);
        try (JavaSparkContext sc = spark(2)) {
            assertThatThrownBy(() -> JtrainSpark.train(sc, 2, options))
                    .isInstanceOf(SparkException.class)
                    .hasMessageContaining("jtrain exited with code")
                    .hasMessageMatching("(?s).*rank [01] of 2 \\(Spark partition [01].*")
                    .hasMessageContaining("no-such-preset");
        }
    }
}
