package dev.jtrain.spark;

import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.Serializable;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The body of one barrier task: one jtrain rank.
 *
 * <ol>
 *   <li>Rank = partition id; world = number of tasks; every task's executor host from {@code getTaskInfos()}.</li>
 *   <li>Rank 0 picks a free port for the store, and one {@code allGather} hands it to every task (Spark's barrier
 *       coordinator is the only channel tasks share before jtrain's store exists; each sync call costs about 1 s,
 *       so there is exactly one).</li>
 *   <li>The rank's child JVM runs {@code jtrain <trainArgs>} with the rendezvous variables ({@link RankEnv}) and the
 *       driver's job token; with {@code dataFromPartitions}, the partition's lines are its {@code --data}.</li>
 * </ol>
 * A non-zero exit fails the task, which fails the barrier stage: Spark cancels the other tasks (their children are
 * stopped, see {@link RankProcess}) and the job reports the rank's last lines of output.
 */
final class BarrierTrainTask implements Serializable {
    private final SparkTrainOptions options;

    BarrierTrainTask(SparkTrainOptions options) { this.options = options; }

    Iterator<RankReport> run(Iterator<String> partition) throws Exception {
        BarrierTaskContext ctx = BarrierTaskContext.get();
        int rank = ctx.partitionId();
        BarrierTaskInfo[] infos = ctx.getTaskInfos();
        List<String> hosts = new ArrayList<>();
        for (BarrierTaskInfo info : infos) hosts.add(RankEnv.hostOf(info.address()));
        String[] ports = ctx.allGather(rank == 0 ? Integer.toString(freePort(hosts.get(0))) : "");
        Map<String, String> env = new LinkedHashMap<>(RankEnv.of(rank, hosts, Integer.parseInt(ports[0])));
        env.putAll(options.env());
        env.put("JTRAIN_JOB_TOKEN", options.token());

        Path work = Files.createTempDirectory("jtrain-spark-rank" + rank + "-");
        List<String> command = new ArrayList<>();
        command.add(options.java());
        command.addAll(options.jvmArgs());
        command.add("-jar");
        command.add(options.jtrainJar());
        command.addAll(options.trainArgs());
        long lines = 0;
        if (options.dataFromPartitions()) {
            Path data = work.resolve("partition-" + rank + ".txt");
            try (BufferedWriter w = Files.newBufferedWriter(data, StandardCharsets.UTF_8)) {
                while (partition.hasNext()) {
                    w.write(partition.next());
                    w.newLine();
                    lines++;
                }
            }
            command.add("--data");
            command.add(data.toString());
        }
        String where = "rank " + rank + " of " + infos.length + " (Spark partition " + rank + ", stage attempt "
                + ctx.stageAttemptNumber() + ") on " + hosts.get(rank);
        RankProcess.Result r;
        try {
            r = RankProcess.run(command, env, rank, System.err);
        } finally {
            deleteQuietly(work);
        }
        if (r.exitCode() != 0) {
            throw new RankFailedException(where + ": jtrain exited with code " + r.exitCode() + "; its last lines:\n  "
                    + String.join("\n  ", r.tail()));
        }
        return List.of(new RankReport(rank, hosts.get(rank), r.exitCode(), lines, r.tail())).iterator();
    }

    /** A port free on this host now (the race to the store's bind is the one torchrun and TorchDistributor accept). */
    private static int freePort(String host) throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(host), 0));
            return s.getLocalPort();
        } catch (IOException notLocal) {
            try (ServerSocket s = new ServerSocket(0)) {
                return s.getLocalPort();
            }
        }
    }

    private static void deleteQuietly(Path dir) {
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // scratch in the executor's temp directory; Spark's own cleanup or the OS removes leftovers
        }
    }

    @Override
    public String toString() { return "BarrierTrainTask" + Arrays.asList(options.trainArgs()); }
}
