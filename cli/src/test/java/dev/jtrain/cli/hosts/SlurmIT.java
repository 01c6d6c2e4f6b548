package dev.jtrain.cli.hosts;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Jobs started by Slurm and by MPI across two emulated hosts (network namespaces with their own host names, a
 * Slurm cluster over them). The ranks find each other from the engine's variables alone and train exactly as one
 * host with four ranks does on the same global batch (same seed, one forced all-reduce algorithm): the same losses
 * and the same model, bit for bit.
 */
@Timeout(900)
class SlurmIT {
    static EmulatedHosts hosts;
    static EmulatedSlurm slurm;
    static final String TOKEN = "slurm-it-token";

    @TempDir static Path shared;
    static Path corpus, oneHost;

    @BeforeAll
    static void cluster() throws Exception {
        hosts = EmulatedHosts.start(2, null);
        slurm = EmulatedSlurm.start(hosts);
        corpus = TrainRuns.corpus(shared);
        oneHost = shared.resolve("one-host");
        var one = onHost1(JtrainJar.command(trainArgs(corpus, oneHost, "--nproc", "4").toArray(String[]::new)),
                shared.resolve("one-host.log"));
        assertThat(one.status()).as(one.output()).isZero();
        assertThat(one.output()).contains("ranks: 4 on 1 host(s): jt-node1[0, 1, 2, 3]");
    }

    @AfterAll
    static void teardown() {
        if (slurm != null) slurm.close();
        if (hosts != null) hosts.close();
    }

    static List<String> trainArgs(Path corpus, Path out, String... more) { return trainArgs(corpus, out, 6, more); }

    static List<String> trainArgs(Path corpus, Path out, int steps, String... more) {
        List<String> a = new ArrayList<>(List.of("train"));
        a.addAll(TrainRuns.MODEL);
        a.addAll(List.of("--data", corpus.toString(), "--max-steps",
                Integer.toString(steps), "--warmup-steps", "2", "--decay-steps", Integer.toString(steps), "--peak-gflops", "50",
                "--no-progress", "--eval-interval", "0", "--sample-tokens", "0", "--out", out.toString()));
        a.addAll(List.of(more));
        return a;
    }

    /** Environment of every run: the job token, and one forced all-reduce algorithm so reduction order is fixed. */
    static Map<String, String> env() {
        var e = new java.util.HashMap<>(slurm.env());
        e.put("JTRAIN_JOB_TOKEN", TOKEN);
        e.put("JTRAIN_ALGO", "allreduce:ring");
        e.put("JTRAIN_TIMEOUT_MS", "60000");
        e.put("JTRAIN_LINK_COSTS", TrainRuns.LINK_COSTS);
        return e;
    }

    static EmulatedHosts.Result onHost1(List<String> cmd, Path log) throws Exception { return onHost1(cmd, log, env()); }

    static EmulatedHosts.Result onHost1(List<String> cmd, Path log, Map<String, String> env) throws Exception {
        Process p = hosts.start(1, cmd, env, log);
        if (!p.waitFor(600, java.util.concurrent.TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError(cmd + " did not finish:\n" + Files.readString(log) + EmulatedSlurm.logs());
        }
        return new EmulatedHosts.Result(p.exitValue(), Files.readString(log));
    }

    static List<String> srun(List<String> jtrainArgs) {
        List<String> c = new ArrayList<>(List.of("srun", "-N2", "--ntasks-per-node=2", "--kill-on-bad-exit=1"));
        c.addAll(JtrainJar.command(jtrainArgs.toArray(String[]::new)));
        return c;
    }

    /** {@code srun -N2 --ntasks-per-node=2 jtrain train}, then a job resumed from its step-3 checkpoint. */
    @Test
    void srunAcrossTwoHostsTrainsLikeOneHostWithFourRanksAndResumesBitwise(@TempDir Path dir) throws Exception {
        Path ckpt = dir.resolve("ckpt");

        var measuring = new java.util.HashMap<>(env());
        measuring.remove("JTRAIN_LINK_COSTS");
        var two = onHost1(srun(trainArgs(corpus, dir.resolve("two-hosts"), "--ckpt-dir", ckpt.toString(), "--ckpt-every", "3")),
                dir.resolve("two-hosts.log"), measuring);
        assertThat(two.status()).as(two.output()).isZero();
        assertThat(two.output()).contains("4 process(es)").contains("DDP")
                .contains("ranks: 4 on 2 host(s): jt-node1[0, 1], jt-node2[2, 3]")
                .containsPattern("link figures \\(measured at start; [^)]*\\): intra: alpha=\\S+us beta=\\S+GB/s .*; inter: alpha=");

        assertThat(TrainRuns.losses(dir.resolve("two-hosts"), 0)).hasSize(6).isEqualTo(TrainRuns.losses(oneHost, 0));
        assertThat(TrainRuns.model(dir.resolve("two-hosts"))).isEqualTo(TrainRuns.model(oneHost));

        TrainRuns.rollBack(ckpt, 3);
        var resumed = onHost1(srun(trainArgs(corpus, dir.resolve("resumed"), "--ckpt-dir", ckpt.toString(), "--resume")),
                dir.resolve("resumed.log"));
        assertThat(resumed.status()).as(resumed.output()).isZero();
        assertThat(resumed.output()).contains("at step 3")
                .contains("link figures (not measured: from JTRAIN_LINK_COSTS or this job's earlier start): " + TrainRuns.LINK_COSTS);
        assertThat(TrainRuns.losses(dir.resolve("resumed"), 0)).hasSize(3).isEqualTo(TrainRuns.losses(dir.resolve("two-hosts"), 3));
        assertThat(TrainRuns.model(dir.resolve("resumed"))).isEqualTo(TrainRuns.model(dir.resolve("two-hosts")));
    }

    /**
     * {@code srun -N2 --ntasks-per-node=2 jtrain train --zero 3 --shard-within host}: hybrid sharding, each host holding
     * a sharded replica. It trains like the one-host DDP run up to the reduction order (losses within 1e-4), and
     * resumes bitwise from its step-3 checkpoint, whose replicas the two hosts wrote once between them.
     */
    @Test
    void hybridShardingAcrossTwoHostsTrainsLikeOneHostAndResumesBitwise(@TempDir Path dir) throws Exception {
        Path ckpt = dir.resolve("ckpt");
        String[] hsdp = {"--zero", "3", "--shard-within", "host", "--ckpt-dir", ckpt.toString()};
        List<String> first = trainArgs(corpus, dir.resolve("hsdp"), hsdp);
        first.addAll(List.of("--ckpt-every", "3"));
        var run = onHost1(srun(first), dir.resolve("hsdp.log"));
        assertThat(run.status()).as(run.output()).isZero();
        assertThat(run.output()).contains("ZeRO-3 sharded within each host, replicated across hosts (HSDP)")
                .contains("ranks: 4 on 2 host(s)")
                .containsPattern("= 8\\.0\\d B/param"); // 16 B/param over a host's 2 ranks, not the job's 4 (4 B/param)
        List<String> mine = TrainRuns.losses(dir.resolve("hsdp"), 0), one = TrainRuns.losses(oneHost, 0);
        assertThat(mine).hasSize(6);
        for (int i = 0; i < mine.size(); i++)
            assertThat(Double.parseDouble(mine.get(i).split(":")[1])).as("loss %s", mine.get(i))
                    .isCloseTo(Double.parseDouble(one.get(i).split(":")[1]), within(1e-4));

        TrainRuns.rollBack(ckpt, 3);
        List<String> again = trainArgs(corpus, dir.resolve("resumed"), hsdp);
        again.add("--resume");
        var resumed = onHost1(srun(again), dir.resolve("resumed.log"));
        assertThat(resumed.status()).as(resumed.output()).isZero();
        assertThat(resumed.output()).contains("at step 3");
        assertThat(TrainRuns.losses(dir.resolve("resumed"), 0)).isEqualTo(TrainRuns.losses(dir.resolve("hsdp"), 3));
        assertThat(TrainRuns.model(dir.resolve("resumed"))).isEqualTo(TrainRuns.model(dir.resolve("hsdp")));
    }

    /**
     * {@code salloc -N2 --ntasks-per-node=2 mpirun jtrain train}: inside the allocation Slurm's variables describe
     * nodes, Open MPI's the ranks; the store lands on the allocation's first node. {@code -x} passes the token and
     * the forced algorithm; {@code --bind-to none} lets each JVM see every core.
     */
    @Test
    void mpirunInsideASlurmAllocationTrainsLikeOneHostWithFourRanks(@TempDir Path dir) throws Exception {
        List<String> c = new ArrayList<>(List.of("salloc", "-N2", "--ntasks-per-node=2", "mpirun", "--allow-run-as-root",
                "--bind-to", "none", "-x", "JTRAIN_JOB_TOKEN", "-x", "JTRAIN_ALGO", "-x", "JTRAIN_TIMEOUT_MS"));
        assertTrainsLikeOneHostWithFourRanks(c, dir);
    }

    /**
     * Plain {@code mpirun --host jt-node1:2,jt-node2:2} with no Slurm: Open MPI's rsh launcher starts its daemon on
     * host 2 (through {@code test/hosts/rsh-agent.sh}, in place of ssh), and since MPI does not say where rank 0 runs,
     * {@code -x MASTER_ADDR} names its host.
     */
    @Test
    void plainMpirunWithAHostListTrainsLikeOneHostWithFourRanks(@TempDir Path dir) throws Exception {
        List<String> c = new ArrayList<>(List.of("mpirun", "--allow-run-as-root", "--bind-to", "none",
                "--mca", "plm_rsh_agent", EmulatedHosts.REPO.resolve("test/hosts/rsh-agent.sh").toString(),
                "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0",
                "--host", "jt-node1:2,jt-node2:2", "-np", "4", "-x", "MASTER_ADDR=jt-node1",
                "-x", "JTRAIN_JOB_TOKEN", "-x", "JTRAIN_ALGO", "-x", "JTRAIN_TIMEOUT_MS"));
        assertTrainsLikeOneHostWithFourRanks(c, dir);
    }

    /** Runs {@code mpirunPrefix jtrain train ...} on host 1: 4 ranks on 2 hosts, bit for bit like the one-host run. */
    private static void assertTrainsLikeOneHostWithFourRanks(List<String> mpirunPrefix, Path dir) throws Exception {
        List<String> c = new ArrayList<>(mpirunPrefix);
        c.addAll(JtrainJar.command(trainArgs(corpus, dir.resolve("mpi")).toArray(String[]::new)));
        var mpi = onHost1(c, dir.resolve("mpi.log"));
        assertThat(mpi.status()).as(mpi.output()).isZero();
        assertThat(mpi.output()).contains("ranks: 4 on 2 host(s): jt-node1[0, 1], jt-node2[2, 3]");
        assertThat(TrainRuns.losses(dir.resolve("mpi"), 0)).hasSize(6).isEqualTo(TrainRuns.losses(oneHost, 0));
        assertThat(TrainRuns.model(dir.resolve("mpi"))).isEqualTo(TrainRuns.model(oneHost));
    }

    /**
     * {@code srun -N2 --ntasks-per-node=1 jtrain launch --nproc-per-node 2 --max-restarts 1}: one launcher per node,
     * which takes the node count, its node rank, node 0's address and the port from Slurm. Rank 3 (host 2) is
     * SIGKILLed mid-run; Slurm sees nothing (its tasks are the launchers), both launchers restart the group together,
     * host 1's ranks continue in their JVMs, the group resumes from the nodes' memory, and the run ends bitwise as
     * the same job uninterrupted.
     */
    @Test
    void srunStartsALauncherPerNodeThatRestartsTheGroupWhenARankDiesAndTheRunEndsBitwise(@TempDir Path dir) throws Exception {
        java.util.function.Function<String, List<String>> job = name -> srunLaunch(trainArgs(corpus, dir.resolve(name), 24,
                "--bucket-mb", "4", "--grad-reduce", "ordered", "--ckpt-dir", dir.resolve(name + "-ckpt").toString(),
                "--ckpt-every", "8", "--mem-ckpt-every", "2", "--resume"));
        var whole = onHost1(job.apply("whole"), dir.resolve("whole.log"));
        assertThat(whole.status()).as(whole.output()).isZero();
        assertThat(whole.output()).contains("ranks: 4 on 2 host(s): jt-node1[0, 1], jt-node2[2, 3]")
                .contains("each node's ranks save a whole copy into their node's launcher");

        Path out = dir.resolve("killed"), log = dir.resolve("killed.log");
        Process p = hosts.start(1, job.apply("killed"), env(), log);
        TrainRuns.waitForSteps(out, 11, log, p);
        killRank(3, out);
        assertThat(p.waitFor(300, java.util.concurrent.TimeUnit.SECONDS)).as(Files.readString(log)).isTrue();
        String o = Files.readString(log);
        assertThat(p.exitValue()).as(o).isZero();
        assertThat(o).contains("restarting the group (restart 1 of 1, all 2 nodes together)", "resumed from the nodes' memory",
                "rank 0 continues in its JVM (warm restart");
        assertThat(TrainRuns.model(out)).as("bitwise as the uninterrupted job").isEqualTo(TrainRuns.model(dir.resolve("whole")));
    }

    /** {@code srun -N2 --ntasks-per-node=1 jtrain launch --nproc-per-node 2 --max-restarts 1 -- jtrain <args>}. */
    static List<String> srunLaunch(List<String> jtrainArgs) {
        List<String> launch = new ArrayList<>(List.of("launch", "--nproc-per-node", "2", "--max-restarts", "1",
                "--join-timeout-ms", "30000", "--stop-grace-ms", "2000", "--"));
        launch.addAll(JtrainJar.command(jtrainArgs.toArray(String[]::new)));
        List<String> c = new ArrayList<>(List.of("srun", "-N2", "--ntasks-per-node=1"));
        c.addAll(JtrainJar.command(launch.toArray(String[]::new)));
        return c;
    }

    /** SIGKILLs the JVM of rank {@code rank} of the job writing to {@code out}: its command names the run, its environment the rank. */
    private static void killRank(int rank, Path out) throws Exception {
        ProcessHandle victim = ProcessHandle.allProcesses()
                .filter(ph -> ph.info().commandLine().orElse("").contains(out.toString()))
                .filter(ph -> {
                    try {
                        return List.of(new String(Files.readAllBytes(Path.of("/proc", Long.toString(ph.pid()), "environ")),
                                java.nio.charset.StandardCharsets.ISO_8859_1).split("\0"))
                                .contains("RANK=" + rank);
                    } catch (java.io.IOException gone) {
                        return false;
                    }
                })
                .findFirst().orElseThrow(() -> new AssertionError("no process of rank " + rank + " writing to " + out));
        new ProcessBuilder("kill", "-KILL", Long.toString(victim.pid())).inheritIO().start().waitFor();
    }

    /** A job's tasks on host 2 die mid-step: {@code --kill-on-bad-exit} ends the whole step at once, non-zero. */
    @Test
    void killOnBadExitCancelsTheRestWhenOneHostsTasksDie(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("run");
        Process p = hosts.start(1, srun(trainArgs(corpus, out, 100_000)), env(), dir.resolve("srun.log"));
        TrainRuns.waitForSteps(out, 3, dir.resolve("srun.log"), p);
        long t0 = System.nanoTime();
        hosts.kill(2, "KILL", false);
        assertThat(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).as(Files.readString(dir.resolve("srun.log"))).isTrue();
        assertThat(p.exitValue()).isNotZero();
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(30);
    }

    /**
     * The scheduler's SIGTERM (preemption, {@code scancel --signal=TERM}) reaches every task at slightly different
     * times: they agree on a step, save it, and exit 0; the job resumed from there ends exactly as an uninterrupted
     * run of the same length.
     */
    @Test
    void sigtermCheckpointsAtAnAgreedStepExitsCleanlyAndTheResumedJobMatchesAnUninterruptedOne(@TempDir Path dir) throws Exception {
        Path ckpt = dir.resolve("ckpt");
        int steps = 30; // the signal lands a few steps after step 5 (steps take about 0.4 s in these JVMs)
        var whole = onHost1(JtrainJar.command(trainArgs(corpus, dir.resolve("whole"), steps, "--nproc", "4").toArray(String[]::new)),
                dir.resolve("whole.log"));
        assertThat(whole.status()).as(whole.output()).isZero();

        Path log = dir.resolve("preempted.log");
        Process p = hosts.start(1, srun(trainArgs(corpus, dir.resolve("preempted"), steps, "--ckpt-dir", ckpt.toString())), env(), log);
        TrainRuns.waitForSteps(dir.resolve("preempted"), 5, log, p);
        String conf = "SLURM_CONF=" + env().get("SLURM_CONF");
        String job = EmulatedHosts.run(hosts.on(1, List.of("env", conf, "squeue", "-h", "-o", "%i")), java.time.Duration.ofSeconds(30), true)
                .output().strip().lines().findFirst().orElseThrow();
        EmulatedHosts.run(hosts.on(1, List.of("env", conf, "scancel", "--signal=TERM", job + ".0")),
                java.time.Duration.ofSeconds(30), true);
        assertThat(p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        String preempted = Files.readString(log);
        assertThat(p.exitValue()).as(preempted).isZero();
        assertThat(preempted).contains("stopped on SIGTERM after");
        int at = Integer.parseInt(preempted.replaceAll("(?s).*stopped on SIGTERM after (\\d+) steps.*", "$1"));
        assertThat(at).isBetween(5, steps - 1);

        var resumed = onHost1(srun(trainArgs(corpus, dir.resolve("resumed"), steps, "--ckpt-dir", ckpt.toString(), "--resume")),
                dir.resolve("resumed.log"));
        assertThat(resumed.status()).as(resumed.output()).isZero();
        assertThat(resumed.output()).contains("at step " + at);
        assertThat(TrainRuns.losses(dir.resolve("resumed"), 0)).isEqualTo(TrainRuns.losses(dir.resolve("whole"), at));
        assertThat(TrainRuns.model(dir.resolve("resumed"))).isEqualTo(TrainRuns.model(dir.resolve("whole")));
    }
}
