package dev.jtrain.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code spark-submit} entry point: runs one jtrain command as a barrier stage of {@code --ranks} tasks.
 * <pre>
 *   spark-submit --master spark://host:7077 --class dev.jtrain.spark.JtrainSparkMain jtrain-spark.jar \
 *     --ranks 4 --jtrain-jar /opt/jtrain/jtrain-cli.jar --java /opt/jdk-25/bin/java \
 *     -- train --preset small --data /shared/corpus.txt --out /shared/run1
 * </pre>
 * With {@code --text PATH} the corpus is read by Spark ({@code textFile}, any Hadoop file system) and each rank
 * trains on one partition of it.
 */
@Command(name = "jtrain-spark", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Run a jtrain command as a Spark barrier stage: one task per rank.")
public final class JtrainSparkMain implements Callable<Integer> {
    @Option(names = "--ranks", required = true, description = "Number of ranks = barrier tasks; needs that many free task slots.")
    int ranks;

    @Option(names = "--jtrain-jar", required = true, description = "Path of jtrain-cli.jar, the same on every executor.")
    String jtrainJar;

    @Option(names = "--java", description = "A JDK 25 java executable, the same path on every executor"
            + " (default: this JVM's if it is 25 or newer, else $JTRAIN_JAVA_HOME/bin/java).")
    String java;

    @Option(names = "--text", description = "Read the corpus with Spark (textFile) and give each rank one partition of it,"
            + " instead of the train command's --data.")
    String text;

    @Option(names = "--env", description = "Extra environment for every rank, NAME=VALUE (repeatable), e.g. JTRAIN_ALGO=allreduce:ring.")
    Map<String, String> env = new HashMap<>();

    @Parameters(arity = "1..*", paramLabel = "JTRAIN_ARGS", description = "The jtrain command and its options, after --.")
    List<String> jtrainArgs;

    @Override
    public Integer call() {
        SparkConf conf = new SparkConf().setAppName("jtrain " + String.join(" ", jtrainArgs))
                .setIfMissing("spark.master", "local[" + ranks + "]");
        boolean local = conf.get("spark.master").startsWith("local"); // paths can be checked here only when executors are local
        SparkTrainOptions options = SparkTrainOptions.of(java, jtrainJar, jtrainArgs, text != null, env, local);
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            List<RankReport> reports;
            if (text != null) {
                JavaRDD<String> lines = sc.textFile(text, ranks);
                int n = lines.getNumPartitions();
                reports = JtrainSpark.train(n == ranks ? lines : n > ranks ? lines.coalesce(ranks) : lines.repartition(ranks), options);
            } else {
                reports = JtrainSpark.train(sc, ranks, options);
            }
            for (String line : reports.get(0).tail()) System.out.println("[rank 0] " + line); // the job's summary
            for (RankReport r : reports) {
                System.out.printf("rank %d on %s: exit %d%s%n", r.rank(), r.host(), r.exitCode(),
                        r.lines() > 0 ? ", " + r.lines() + " lines of its partition" : "");
            }
            return 0;
        }
    }

    public static void main(String[] args) { System.exit(new CommandLine(new JtrainSparkMain()).execute(args)); }
}
