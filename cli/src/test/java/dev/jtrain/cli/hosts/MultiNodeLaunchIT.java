package dev.jtrain.cli.hosts;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jtrain launch} once per emulated host ({@code --nnodes 2 --node-rank K}): the launchers agree on restarts
 * through node 0's store, and a host that dies or drops off the network mid-step makes every surviving rank fail
 * within the configured timeout, naming the unreachable rank and host, with every launcher ending non-zero and
 * nothing left hanging.
 */
@Timeout(600)
class MultiNodeLaunchIT {
    static EmulatedHosts hosts;
    static final String TOKEN = "launch-it-token";
    static final String PORT = "29411";
    private final List<Process> started = new ArrayList<>();

    @BeforeAll
    static void up() { hosts = EmulatedHosts.start(2, null); }

    @AfterAll
    static void down() { if (hosts != null) hosts.close(); }

    @AfterEach
    void stopLeftovers() {
        for (Process p : started) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        hosts.kill(1, "KILL", false);
        hosts.kill(2, "KILL", false);
        hosts.link(2, "up");
    }

    private Process launcher(int host, Path log, int maxRestarts, List<String> command, Map<String, String> extraEnv) {
        return launcher(host, log, List.of("--max-restarts", Integer.toString(maxRestarts), "--join-timeout-ms", "30000"), command, extraEnv);
    }

    private Process launcher(int host, Path log, List<String> options, List<String> command, Map<String, String> extraEnv) {
        return launch(host, log, List.of("--node-rank", Integer.toString(host - 1)), options, command, extraEnv);
    }

    /** {@code jtrain launch} of a 2-node job on {@code host}, as the node {@code role} says. */
    private Process launch(int host, Path log, List<String> role, List<String> options, List<String> command, Map<String, String> extraEnv) {
        List<String> args = new ArrayList<>(List.of("launch", "--nnodes", "2"));
        args.addAll(role);
        args.addAll(List.of("--master-addr", "jt-node1", "--master-port", PORT, "--nproc-per-node", "2", "--stop-grace-ms", "2000"));
        args.addAll(options);
        args.add("--");
        args.addAll(command);
        Map<String, String> env = new HashMap<>(extraEnv);
        env.put("JTRAIN_JOB_TOKEN", TOKEN);
        env.put("JTRAIN_LINK_COSTS", TrainRuns.LINK_COSTS);
        Process p = hosts.start(host, JtrainJar.command(args.toArray(String[]::new)), env, log);
        started.add(p);
        return p;
    }

    /** For runs compared bitwise: the ring all-reduce forced, and timeouts short enough for a test. */
    private static final Map<String, String> BITWISE_ENV = Map.of("JTRAIN_ALGO", "allreduce:ring", "JTRAIN_COMM_TIMEOUT_MS", "15000",
            "JTRAIN_HEARTBEAT_TIMEOUT_MS", "5000");

    /**
     * {@code tiny} for {@code steps} steps with gradients summed in the fixed order, checkpoints to disk every
     * {@code diskEvery} and (when {@code memEvery > 0}) to the nodes' memory every {@code memEvery}, resuming: as
     * (run directory, checkpoint directory) -> command.
     */
    private static java.util.function.BiFunction<Path, Path, List<String>> orderedRun(Path corpus, int steps, int diskEvery, int memEvery) {
        return (out, ckpt) -> {
            List<String> a = train(corpus, out, steps);
            a.addAll(List.of("--bucket-mb", "4", "--ckpt-dir", ckpt.toString(), "--ckpt-every", Integer.toString(diskEvery),
                    "--resume", "--grad-reduce", "ordered"));
            if (memEvery > 0) a.addAll(List.of("--mem-ckpt-every", Integer.toString(memEvery)));
            return a;
        };
    }

    /** The final model of {@code run} on both hosts, uninterrupted (run {@code name} in {@code dir}). */
    private byte[] uninterrupted(Path dir, String name, java.util.function.BiFunction<Path, Path, List<String>> run) throws Exception {
        Path out = dir.resolve(name), log1 = dir.resolve(name + "1.log"), log2 = dir.resolve(name + "2.log");
        Process r1 = launcher(1, log1, 0, run.apply(out, dir.resolve(name + "-ckpt")), BITWISE_ENV);
        Process r2 = launcher(2, log2, 0, run.apply(out, dir.resolve(name + "-ckpt")), BITWISE_ENV);
        assertThat(await(r1, 300, log1)).as(Files.readString(log1)).isZero();
        assertThat(await(r2, 300, log2)).as(Files.readString(log2)).isZero();
        return Files.readAllBytes(out.resolve("model.safetensors"));
    }

    private static List<String> train(Path corpus, Path out, int steps) {
        List<String> args = new ArrayList<>(List.of("train"));
        args.addAll(TrainRuns.MODEL);
        args.addAll(List.of("--data", corpus.toString(),
                "--max-steps", Integer.toString(steps), "--peak-gflops", "50", "--no-progress", "--eval-interval", "0",
                "--sample-tokens", "0", "--out", out.toString()));
        return JtrainJar.command(args.toArray(String[]::new));
    }

    private static int await(Process p, long seconds, Path log) throws Exception {
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) throw new AssertionError("still running after " + seconds + " s:\n" + Files.readString(log));
        return p.exitValue();
    }

    /**
     * Attempt 0: rank 3 (host 2) fails while the other ranks would run for minutes; every node stops its ranks and
     * both restart together as epoch 1, which ranks see as JTRAIN_RESTART_COUNT, and train to the end.
     */
    @Test
    void aRankFailingOnOneHostRestartsEveryNodeTogether(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        String trainLine = String.join(" ", train(corpus, dir.resolve("run"), 4));
        String script = "echo \"rank $RANK epoch $JTRAIN_RESTART_COUNT on $(hostname)\"; "
                + "if [ \"$JTRAIN_RESTART_COUNT\" = 0 ]; then "
                + "  if [ \"$RANK\" = 3 ]; then sleep 2; echo 'rank 3 gives up' >&2; exit 3; fi; exec sleep 300; "
                + "fi; exec " + trainLine;
        long t0 = System.nanoTime();
        Path log1 = dir.resolve("node0.log"), log2 = dir.resolve("node1.log");
        Process n1 = launcher(1, log1, 1, List.of("sh", "-c", script), Map.of());
        Process n2 = launcher(2, log2, 1, List.of("sh", "-c", script), Map.of());
        int s1 = await(n1, 300, log1), s2 = await(n2, 300, log2);
        String o1 = Files.readString(log1), o2 = Files.readString(log2);
        assertThat(s1).as(o1).isZero();
        assertThat(s2).as(o2).isZero();
        assertThat(o1).contains("[rank 0] rank 0 epoch 0 on jt-node1").contains("[rank 1] rank 1 epoch 1 on jt-node1")
                .contains("rank 3 on node 1 (jt-node2) exited with status 3")
                .contains("restarting the group (restart 1 of 1, all 2 nodes together)")
                .contains("done: 4 steps");
        assertThat(o2).contains("[rank 3] rank 3 epoch 1 on jt-node2").contains("restarting the group (restart 1 of 1, all 2 nodes together)");
        // the sleeping ranks of attempt 0 were stopped by the other node's failure, not waited for
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(200);
    }

    /** Every process of host 2 is killed mid-training: host 1's ranks fail at once naming a rank on jt-node2. */
    @Test
    void killingEveryProcessOfAHostFailsTheOthersNamingIt(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        Path out = dir.resolve("run");
        Path log1 = dir.resolve("node0.log"), log2 = dir.resolve("node1.log");
        Map<String, String> env = Map.of("JTRAIN_COMM_TIMEOUT_MS", "15000");
        Process n1 = launcher(1, log1, 0, train(corpus, out, 100_000), env);
        launcher(2, log2, 0, train(corpus, out, 100_000), env);
        TrainRuns.waitForSteps(out, 3, log1, n1);
        long t0 = System.nanoTime();
        hosts.kill(2, "KILL", false);
        int s1 = await(n1, 60, log1);
        double seconds = (System.nanoTime() - t0) / 1e9;
        String o1 = Files.readString(log1);
        assertThat(s1).as(o1).isNotZero();
        assertThat(o1).containsPattern("peer=[23] host=jt-node2/10\\.231\\.0\\.2");
        assertThat(seconds).as(o1).isLessThan(15 + 10);
    }

    /**
     * Host 2's link goes down mid-training (no FIN, no RST: packets just stop): both sides block until the
     * communication timeout, then fail naming the peer and its host; both launchers end non-zero, none hangs.
     */
    @Test
    void aHostWhoseLinkGoesDownIsNamedWithinTheTimeoutAndNothingHangs(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        Path out = dir.resolve("run");
        Path log1 = dir.resolve("node0.log"), log2 = dir.resolve("node1.log");
        Map<String, String> env = Map.of("JTRAIN_COMM_TIMEOUT_MS", "10000");
        // the cut-off launcher ends when its store calls time out (the join timeout): short, so the test does not wait
        List<String> options = List.of("--max-restarts", "0", "--join-timeout-ms", "12000");
        Process n1 = launcher(1, log1, options, train(corpus, out, 100_000), env);
        Process n2 = launcher(2, log2, options, train(corpus, out, 100_000), env);
        TrainRuns.waitForSteps(out, 3, log1, n1);
        long t0 = System.nanoTime();
        hosts.link(2, "down");
        int s1 = await(n1, 120, log1);
        double seconds = (System.nanoTime() - t0) / 1e9;
        int s2 = await(n2, 120, log2);
        String o1 = Files.readString(log1), o2 = Files.readString(log2);
        assertThat(s1).as(o1).isNotZero();
        assertThat(s2).as(o2).isNotZero();
        // (an exchange names the peer it sends to and the one it receives from: one of them is across the cut link)
        assertThat(o1).containsPattern("rank [01] .*within timeoutMs=10000 \\(waiting on [^;]*peer rank [23] on host jt-node2");
        assertThat(seconds).as(o1).isLessThan(10 + 20);
        // the cut-off side too: its ranks name what they waited on, although the store they would leave a mark in is
        // out of reach (its launcher then ends when its own store call times out)
        assertThat(o2).containsPattern("rank [23] .*within timeoutMs=10000 \\(waiting on [^;]*peer rank [01] on host jt-node1");
    }

    /**
     * Three failures, each at a random step (the seed is printed), each recovered by itself, each ending bitwise as an
     * uninterrupted run (fixed buckets, gradients summed in one fixed order: {@code --grad-reduce ordered}) with at
     * most one checkpoint interval recomputed:
     * <ol>
     *   <li>every process of host 2, its launcher included, is SIGKILLed mid-run, and the cluster manager (here, the
     *       test) starts host 2's launcher again: it rejoins and the group restarts from the newest checkpoint, here
     *       the in-memory one (every 2 steps; disk every 8): host 1's launcher holds host 2's shards as its buddy, and
     *       host 2's new launcher holds nothing;</li>
     *   <li>one rank on host 2 is SIGSTOPped: the others name it through the heartbeat, the launchers kill it and
     *       restart the group;</li>
     *   <li>host 2's link goes down for 8 s: the ranks on both sides fail (heartbeats, timeouts), the launchers'
     *       agreement waits out the outage, and the group restarts once the link is back.</li>
     * </ol>
     */
    @Test
    void aLostHostOrAHungRankIsRecoveredAndTheRunEndsBitwiseAsIfNothingHappened(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        int steps = 24, k = 4, kMem = 2;
        long seed = System.nanoTime();
        var random = new java.util.Random(seed);
        // each fault after at least 5 steps, with at least 7 to go (steps take about 0.4 s in these C1-compiled JVMs:
        // the job must not end before the fault lands)
        int killAt = 5 + random.nextInt(13), hangAt = 5 + random.nextInt(13), linkAt = 5 + random.nextInt(13);
        System.out.printf("fault steps (seed %d): host killed after %d, rank hung after %d, link down after %d%n", seed, killAt, hangAt, linkAt);
        Map<String, String> env = BITWISE_ENV;
        var run = orderedRun(corpus, steps, k, 0);
        var runMem = orderedRun(corpus, steps, 8, kMem);
        byte[] reference = uninterrupted(dir, "ref", run);

        // 1. host 2 lost, its launcher started again
        Path out = dir.resolve("killed"), ckpt = dir.resolve("killed-ckpt");
        Path log1 = dir.resolve("killed-node0.log"), log2 = dir.resolve("killed-node1.log"), log2again = dir.resolve("killed-node1-again.log");
        Process n1 = launcher(1, log1, 1, runMem.apply(out, ckpt), env);
        launcher(2, log2, 1, runMem.apply(out, ckpt), env);
        TrainRuns.waitForSteps(out, killAt, log1, n1);
        hosts.kill(2, "KILL", false); // the ranks and the launcher of host 2
        Process again = launcher(2, log2again, 1, runMem.apply(out, ckpt), env);
        int s1 = await(n1, 300, log1), s2 = await(again, 300, log2again);
        String o1 = Files.readString(log1), o2 = Files.readString(log2again);
        assertThat(s1).as(o1).isZero();
        assertThat(s2).as(o2).isZero();
        assertThat(o2).contains("[launcher] node 1 replaces a launcher lost with its ranks in attempt 0",
                "restarting the group (restart 1 of 1, all 2 nodes together)");
        assertThat(o1).contains("restarting the group (restart 1 of 1, all 2 nodes together)").contains("recovery (restart 1)")
                .as("DDP: each node keeps a whole copy, and host 2's new ranks load host 1's")
                .contains("each node's ranks save a whole copy into their node's launcher");
        assertThat(o1).as("host 1's ranks survived and continue in their JVMs").contains(
                "[launcher] rank 0 continues in its JVM (warm restart", "[launcher] rank 1 continues in its JVM (warm restart");
        assertThat(Files.readAllBytes(out.resolve("model.safetensors"))).as("bitwise as the uninterrupted run").isEqualTo(reference);
        var rec = recovery(out);
        assertThat(rec.get("warm").asBoolean()).isTrue();
        // the newest copy anywhere: the nodes' memory, unless the host died while a step's memory copy was under way
        // and the disk had that step (every 8)
        if (rec.get("resumed_from").asText().equals("disk")) {
            assertThat(o1).contains("resumed from disk");
            assertThat(rec.get("resumed_step").asLong() % 8).as("a disk step").isZero();
        } else {
            assertThat(rec.get("resumed_from").asText()).isEqualTo("memory");
            assertThat(o1).contains("resumed from the nodes' memory");
        }
        assertThat(rec.get("resumed_step").asLong()).as("at least as new as the newest disk checkpoint before the kill")
                .isGreaterThanOrEqualTo(killAt / 8 * 8L);
        assertThat(rec.get("steps_recomputed").asLong()).as("nothing older than the newest copy was taken").isBetween(0L, (long) kMem);

        // 2. a rank of host 2 hangs
        out = dir.resolve("hung");
        ckpt = dir.resolve("hung-ckpt");
        log1 = dir.resolve("hung-node0.log");
        log2 = dir.resolve("hung-node1.log");
        n1 = launcher(1, log1, 1, run.apply(out, ckpt), env);
        Process n2 = launcher(2, log2, 1, run.apply(out, ckpt), env);
        TrainRuns.waitForSteps(out, hangAt, log1, n1);
        ProcessHandle rank = n2.descendants().filter(p -> p.info().command().orElse("").endsWith("java"))
                .max(java.util.Comparator.comparingLong(ProcessHandle::pid)).orElseThrow(); // a rank (started after its launcher)
        new ProcessBuilder("kill", "-STOP", Long.toString(rank.pid())).inheritIO().start().waitFor();
        s1 = await(n1, 300, log1);
        s2 = await(n2, 300, log2);
        o1 = Files.readString(log1);
        o2 = Files.readString(log2);
        assertThat(s1).as(o1).isZero();
        assertThat(s2).as(o2).isZero();
        assertThat(o1 + o2).contains("sent no heartbeat").contains("restarting the group (restart 1 of 1, all 2 nodes together)");
        assertThat(o2).as("the hung rank can not park: it is killed and starts anew")
                .containsPattern("rank [23] did not stop its attempt within \\d+ ms; killed, it restarts cold");
        assertThat(Files.readAllBytes(out.resolve("model.safetensors"))).as("bitwise as the uninterrupted run").isEqualTo(reference);
        assertThat(recovery(out).get("steps_recomputed").asLong()).isBetween(0L, (long) k);

        // 3. host 2's link goes down for 8 s and comes back
        out = dir.resolve("link");
        ckpt = dir.resolve("link-ckpt");
        log1 = dir.resolve("link-node0.log");
        log2 = dir.resolve("link-node1.log");
        n1 = launcher(1, log1, 1, run.apply(out, ckpt), env);
        n2 = launcher(2, log2, 1, run.apply(out, ckpt), env);
        TrainRuns.waitForSteps(out, linkAt, log1, n1);
        hosts.link(2, "down");
        Thread.sleep(8_000);
        hosts.link(2, "up");
        s1 = await(n1, 300, log1);
        s2 = await(n2, 300, log2);
        o1 = Files.readString(log1);
        o2 = Files.readString(log2);
        assertThat(s1).as(o1).isZero();
        assertThat(s2).as(o2).isZero();
        assertThat(o1).contains("restarting the group (restart 1 of 1, all 2 nodes together)");
        assertThat(o1 + o2).as("no process was lost: every rank continues in its JVM").contains("rank 0 continues in its JVM",
                "rank 1 continues in its JVM", "rank 2 continues in its JVM", "rank 3 continues in its JVM");
        assertThat(Files.readAllBytes(out.resolve("model.safetensors"))).as("bitwise as the uninterrupted run").isEqualTo(reference);
        assertThat(recovery(out).get("steps_recomputed").asLong()).isBetween(0L, (long) k);
    }

    /**
     * Host 2 is SIGKILLed under {@code --min-nodes 1}: host 1's 2 ranks continue as the whole job at once (host 2's
     * launcher is known gone), each running 2 of the launched ranks' rows as pieces summed in the fixed order
     * ({@code --grad-reduce ordered}); host 2's launcher then starts again and the job grows back to 4 ranks. The end
     * is bitwise the uninterrupted 4-rank run's. Host 2's launcher starts as soon as host 1 runs alone, with 69 of
     * the 80 steps to go.
     */
    @Test
    void aLostHostIsLeftOutAtOnceAndWhenItReturnsTheJobGrowsBackBitwise(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        Map<String, String> env = BITWISE_ENV;
        var runLong = orderedRun(corpus, 80, 100, 2); // host 1 alone must still train when host 2 has warmed up (12-15 s)
        byte[] reference = uninterrupted(dir, "long-ref", runLong);
        Path out = dir.resolve("regrow");
        Path ckpt = dir.resolve("regrow-ckpt");
        Path log1 = dir.resolve("regrow-node0.log");
        Path log2 = dir.resolve("regrow-node1.log");
        Path log2again = dir.resolve("regrow-node1-again.log");
        List<String> elastic = List.of("--max-restarts", "2", "--join-timeout-ms", "30000", "--min-nodes", "1");
        Process n1 = launcher(1, log1, elastic, runLong.apply(out, ckpt), env);
        launcher(2, log2, elastic, runLong.apply(out, ckpt), env);
        TrainRuns.waitForSteps(out, 11, log1, n1);
        hosts.kill(2, "KILL", false);
        TrainRuns.waitForLine(log1, "the job shrank from 4 to 2 ranks", n1); // host 1 runs alone now
        Process again = launcher(2, log2again, elastic, runLong.apply(out, ckpt), env);
        int s1 = await(n1, 300, log1), s2 = await(again, 300, log2again);
        String o1 = Files.readString(log1), o2 = Files.readString(log2again);
        assertThat(s1).as(o1).isZero();
        assertThat(s2).as(o2).isZero();
        assertThat(o1).contains("node(s) [1] lost their launcher (its connection to the store ended): continuing without them on 1 of 2 nodes",
                "restarting the group (restart 1 of 2, 1 of 2 nodes [0], world 2)", "the job shrank from 4 to 2 ranks",
                "gradients summed in the fixed order: bitwise as on 4 ranks", "resumed from the nodes' memory",
                "node 1's launcher asks to rejoin the job", "restarting the group (restart 2 of 2, all 2 nodes together)");
        assertThat(o2).contains("[launcher] node 1 rejoins the job, which continued without it");
        // host 2's ranks compiled a step's code while host 1 trained, then joined the regrouped job in those JVMs
        assertThat(o2).contains("warmed up ahead of joining the job: 3 steps of this rank's rows alone",
                "[launcher] node 1 warmed its ranks up in", "rank 2 continues in its JVM (warm restart",
                "rank 3 continues in its JVM (warm restart").doesNotContain("did not park");
        assertThat(o1).as("host 1's ranks continue warm through both restarts").contains("rank 0 continues in its JVM (warm restart");
        // nothing failed when host 2 came back: host 1's ranks finished their step and saved it before they stopped
        assertThat(o1).contains("asks to rejoin the job (host jt-node2): ranks [0, 1] stopped at a step boundary, that step saved",
                "for the group to change (its launcher asked: a node rejoins); that step is saved");
        var back = recoveries(out).getLast();
        assertThat(back.get("restart").asInt()).isEqualTo(2);
        assertThat(back.get("steps_recomputed").asLong()).as("a planned regroup loses no step").isZero();
        assertThat(Files.readAllBytes(out.resolve("model.safetensors"))).as("bitwise as the uninterrupted 4-rank run")
                .isEqualTo(reference);
    }

    /**
     * Host 2 dies for good (no launcher comes back): with {@code --min-nodes 1} host 1's launcher sees that node 1's
     * launcher is gone (its store connection ended) and, without waiting the join timeout, leaves node 1 out and
     * restarts its own 2 ranks as the whole job; they load the 4-rank ZeRO-1 checkpoint from host 1's memory (it holds
     * host 2's shards as their buddy), resharded to 2 ranks, keep the global batch as 2 accumulated pieces per rank,
     * and finish the run (not bitwise as an uninterrupted one: ZeRO's reduction order changes with the world size;
     * DDP's need not: {@link #aLostHostIsLeftOutAtOnceAndWhenItReturnsTheJobGrowsBackBitwise}).
     */
    @Test
    void aHostGoneForGoodIsLeftOutWithMinNodesAndTheJobFinishesOnTheRest(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        int steps = 20;
        Map<String, String> env = Map.of("JTRAIN_COMM_TIMEOUT_MS", "10000", "JTRAIN_HEARTBEAT_TIMEOUT_MS", "5000");
        java.util.function.Function<Path, List<String>> run = out -> {
            List<String> a = train(corpus, out, steps);
            // ZeRO-1 shards the optimizer state across both hosts: each shard on its node's and its buddy's holder
            a.addAll(List.of("--bucket-mb", "4", "--zero", "1", "--mem-ckpt-every", "2", "--resume"));
            return a;
        };
        List<String> options = List.of("--max-restarts", "1", "--join-timeout-ms", "8000", "--min-nodes", "1");
        Path out = dir.resolve("shrink"), log1 = dir.resolve("shrink-node0.log"), log2 = dir.resolve("shrink-node1.log");
        Process n1 = launcher(1, log1, options, run.apply(out), env);
        launcher(2, log2, options, run.apply(out), env);
        TrainRuns.waitForSteps(out, 9, log1, n1);
        hosts.kill(2, "KILL", false); // host 2 and its launcher, for good
        int s1 = await(n1, 300, log1);
        String o1 = Files.readString(log1);
        assertThat(s1).as(o1).isZero();
        assertThat(o1).contains("[launcher] node(s) [1] lost their launcher (its connection to the store ended): continuing without them on 1 of 2 nodes",
                "restarting the group (restart 1 of 1, 1 of 2 nodes [0], world 2)",
                "the job shrank from 4 to 2 ranks: global batch 8 kept; each rank runs its 4 rows as 2 accumulated pieces of 2",
                "resumed from the nodes' memory", "(saved by 4 process(es))", "done: 20 steps",
                "rank 0 continues in its JVM (warm restart");
        var rec = recovery(out);
        assertThat(rec.get("resumed_from").asText()).isEqualTo("memory");
        assertThat(rec.get("steps_recomputed").asLong()).isBetween(0L, 2L);
        assertThat(rec.get("restart_s").asDouble()).as("seconds from the failure to the restart: not the 8 s join timeout").isLessThan(5);
        assertThat(Files.exists(out.resolve("model.safetensors"))).isTrue();
    }

    /** The first recovery record the restarted lead rank wrote to {@code run}'s metrics.jsonl. */
    private static com.fasterxml.jackson.databind.JsonNode recovery(Path run) throws Exception { return recoveries(run).getFirst(); }

    /** Every recovery record in {@code run}'s metrics.jsonl, in order; at least one. */
    private static List<com.fasterxml.jackson.databind.JsonNode> recoveries(Path run) throws Exception {
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        List<com.fasterxml.jackson.databind.JsonNode> found = new ArrayList<>();
        for (String l : Files.readAllLines(run.resolve("metrics.jsonl"))) {
            var n = json.readTree(l);
            if (n.get("type").asText().equals("recovery")) {
                System.out.println(run.getFileName() + " recovery: " + n);
                found.add(n);
            }
        }
        if (found.isEmpty()) throw new AssertionError("no recovery record in " + run.resolve("metrics.jsonl"));
        return found;
    }
}
