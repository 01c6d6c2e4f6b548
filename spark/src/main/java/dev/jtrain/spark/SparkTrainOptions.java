package dev.jtrain.spark;

import java.io.File;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything a barrier task needs to start its rank, resolved and checked once on the driver and shipped to the
 * tasks with the closure.
 *
 * <p>Each task runs its rank as a child JVM: jtrain needs JDK 25 with the Vector API module, while Spark clusters
 * commonly run their executors on JDK 17 or 21, and a child keeps jtrain's libraries (Jackson, picocli, SLF4J) off
 * Spark's classpath. This is the process-per-task model of PySpark's TorchDistributor.
 *
 * @param java               a JDK 25 {@code java} executable, at the same path on every executor
 * @param jtrainJar          {@code jtrain-cli.jar}, at the same path on every executor (shared file system, image,
 *                           or {@code spark-submit --files}, then a path relative to the task's working directory)
 * @param jvmArgs            flags for the child JVM (the Vector API module and native access at least)
 * @param trainArgs          the {@code jtrain} command and its options, e.g. {@code train --preset tiny --max-steps 50}
 * @param token              the job token every rank presents to the store; generated on the driver
 * @param dataFromPartitions true: each rank trains on the text of its partition (written to a file in the task's
 *                           scratch directory and passed as {@code --data}); false: the train options name the data
 * @param env                extra environment for every rank, e.g. {@code JTRAIN_ALGO} or {@code JTRAIN_TIMEOUT_MS}
 */
public record SparkTrainOptions(String java, String jtrainJar, List<String> jvmArgs, List<String> trainArgs, String token,
                                boolean dataFromPartitions, Map<String, String> env) implements Serializable {
    /** The flags jtrain's own launcher script passes. */
    public static final List<String> DEFAULT_JVM_ARGS =
            List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:+UseParallelGC");

    /** Set per rank by the barrier task. */
    static final Set<String> RESERVED = Set.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "JTRAIN_NODE_RANK", "JTRAIN_NNODES", "JTRAIN_JOB_TOKEN");

    public SparkTrainOptions {
        if (java == null || java.isBlank()) throw new IllegalArgumentException("java (a JDK 25 java executable) must be set");
        if (jtrainJar == null || jtrainJar.isBlank()) throw new IllegalArgumentException("jtrainJar (path to jtrain-cli.jar) must be set");
        if (trainArgs == null || trainArgs.isEmpty()) throw new IllegalArgumentException("trainArgs must name a jtrain command, e.g. train");
        if (token == null || token.isBlank()) throw new IllegalArgumentException("token must be set");
        jvmArgs = List.copyOf(jvmArgs == null ? DEFAULT_JVM_ARGS : jvmArgs);
        trainArgs = List.copyOf(trainArgs);
        env = Map.copyOf(env == null ? Map.of() : env);
        for (String k : env.keySet()) {
            if (RESERVED.contains(k)) throw new IllegalArgumentException("env must not set " + k + ": the barrier stage sets it per rank");
        }
        if (dataFromPartitions && (trainArgs.contains("--data") || trainArgs.stream().anyMatch(a -> a.startsWith("--data=")))) {
            throw new IllegalArgumentException("trainArgs name --data, but the data comes from the RDD's partitions;"
                    + " drop --data, or train from a path with JtrainSpark.train(sc, ranks, options)");
        }
    }

    /**
     * Options for {@code trainArgs} with a fresh random token, where the driver can check the paths: {@code java}
     * (null: this JVM's when it is JDK 25 or newer, else {@code $JTRAIN_JAVA_HOME/bin/java}) and {@code jtrainJar}
     * must exist here too when {@code checkPaths} (a local or single-image cluster).
     */
    public static SparkTrainOptions of(String java, String jtrainJar, List<String> trainArgs, boolean dataFromPartitions,
                                       Map<String, String> env, boolean checkPaths) {
        String j = java != null ? java : defaultJava();
        if (checkPaths) {
            if (!Files.isExecutable(Path.of(j))) throw new IllegalArgumentException("java executable not found: " + j);
            if (!Files.isRegularFile(Path.of(jtrainJar))) {
                throw new IllegalArgumentException("jtrain jar not found: " + jtrainJar + " (build it with ./jtrain --version, or"
                        + " point at cli/target/jtrain-cli.jar)");
            }
        }
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        return new SparkTrainOptions(j, jtrainJar, null, trainArgs, "spark-" + HexFormat.of().formatHex(secret), dataFromPartitions,
                env);
    }

    /** This JVM's java when it is 25 or newer, else {@code $JTRAIN_JAVA_HOME/bin/java}. */
    static String defaultJava() {
        if (Runtime.version().feature() >= 25) return Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String home = System.getenv("JTRAIN_JAVA_HOME");
        if (home == null || home.isBlank()) {
            throw new IllegalArgumentException("this JVM is Java " + Runtime.version().feature() + "; jtrain ranks need JDK 25:"
                    + " set JTRAIN_JAVA_HOME to a JDK 25 installed at the same path on every executor, or pass --java");
        }
        return home + File.separator + "bin" + File.separator + "java";
    }
}
