package dev.jtrain.cli.hosts;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hot spare from a Slurm allocation: a step of 3 nodes runs {@code jtrain launch --nnodes 2} on each, so the third
 * node's launcher has no place in the job and stands by as a spare (its ranks warm up, then wait). A 3-node Slurm
 * cluster over 3 emulated hosts, apart from {@link SlurmIT}'s 2-node one.
 */
@Timeout(900)
class SlurmSpareIT {
    static EmulatedHosts hosts;
    static EmulatedSlurm slurm;

    @BeforeAll
    static void cluster() {
        hosts = EmulatedHosts.start(3, null);
        slurm = EmulatedSlurm.start(hosts);
    }

    @AfterAll
    static void teardown() {
        if (slurm != null) slurm.close();
        if (hosts != null) hosts.close();
    }

    /**
     * Host 2 (its launcher and ranks; Slurm's daemons stay) is SIGKILLed once the spare on host 3 stands by: the spare
     * takes node 1's place, the job restarts at full size from the nodes' memory in the spare's warm JVMs, and the run
     * ends bitwise as the same job on 2 nodes uninterrupted. Slurm saw a task die, so srun itself ends non-zero.
     */
    @Test
    void aNodeOfTheStepPastNnodesStandsByAndTakesTheLostHostsPlace(@TempDir Path dir) throws Exception {
        Path corpus = TrainRuns.corpus(dir);
        Function<String, List<String>> train = name -> SlurmIT.trainArgs(corpus, dir.resolve(name), 60, "--bucket-mb", "4",
                "--grad-reduce", "ordered", "--ckpt-dir", dir.resolve(name + "-ckpt").toString(), "--ckpt-every", "100",
                "--mem-ckpt-every", "2", "--resume");
        Process whole = hosts.start(1, srunLaunch(2, train.apply("whole")), env(), dir.resolve("whole.log"));
        assertThat(whole.waitFor(300, TimeUnit.SECONDS)).as(Files.readString(dir.resolve("whole.log"))).isTrue();
        assertThat(whole.exitValue()).as(Files.readString(dir.resolve("whole.log"))).isZero();

        Path out = dir.resolve("spared"), log = dir.resolve("spared.log");
        Process p = hosts.start(1, srunLaunch(3, train.apply("spared")), env(), log);
        TrainRuns.waitForLine(log, "[launcher] spare warmed its ranks up in", p);
        TrainRuns.waitForSteps(out, 11, log, p);
        assertThat(p.isAlive()).as("the job still runs when the spare is ready: " + Files.readString(log)).isTrue();
        hosts.kill(2, "KILL", false);
        assertThat(p.waitFor(300, TimeUnit.SECONDS)).as(Files.readString(log)).isTrue();
        String o = Files.readString(log);
        assertThat(o).contains("[launcher] slurm node 2 is beyond --nnodes 2: a hot spare",
                "[launcher] spare on jt-node3: warming its ranks up and waiting for a node's launcher to be lost",
                "s, standing by\n", "warmed up ahead of joining the job: 3 steps of this rank's rows alone",
                "[launcher] spare on jt-node3 takes the place of node 1: node 1's launcher was lost (its connection to the store ended)",
                "[launcher] node 1 replaces a launcher lost with its ranks in attempt 0 (its ranks warmed up)",
                "restarting the group (restart 1 of 1, all 2 nodes together)", "resumed from the nodes' memory",
                "rank 0 continues in its JVM (warm restart", "rank 2 continues in its JVM (warm restart",
                "rank 3 continues in its JVM (warm restart").doesNotContain("did not park", "continuing without them");
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var recovery = Files.readAllLines(out.resolve("metrics.jsonl")).stream().map(l -> {
            try {
                return json.readTree(l);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).filter(n -> n.get("type").asText().equals("recovery")).findFirst().orElseThrow(() -> new AssertionError("no recovery record"));
        assertThat(recovery.get("resumed_from").asText()).isEqualTo("memory");
        assertThat(recovery.get("steps_recomputed").asLong()).as("K = 2").isBetween(0L, 2L);
        assertThat(TrainRuns.model(out)).as("bitwise as the uninterrupted job").isEqualTo(TrainRuns.model(dir.resolve("whole")));
    }

    /** {@code srun -N<nodes> --ntasks-per-node=1 jtrain launch --nnodes 2 --nproc-per-node 2 --max-restarts 1 -- jtrain <args>}. */
    private static List<String> srunLaunch(int nodes, List<String> jtrainArgs) {
        List<String> launch = new ArrayList<>(List.of("launch", "--nnodes", "2", "--nproc-per-node", "2", "--max-restarts", "1",
                "--join-timeout-ms", "30000", "--stop-grace-ms", "2000", "--"));
        launch.addAll(JtrainJar.command(jtrainArgs.toArray(String[]::new)));
        List<String> c = new ArrayList<>(List.of("srun", "-N" + nodes, "--ntasks-per-node=1"));
        c.addAll(JtrainJar.command(launch.toArray(String[]::new)));
        return c;
    }

    private static java.util.Map<String, String> env() {
        var e = new java.util.HashMap<>(slurm.env());
        e.put("JTRAIN_JOB_TOKEN", "slurm-spare-it-token");
        e.put("JTRAIN_LINK_COSTS", TrainRuns.LINK_COSTS);
        e.put("JTRAIN_ALGO", "allreduce:ring");
        e.put("JTRAIN_COMM_TIMEOUT_MS", "15000");
        e.put("JTRAIN_HEARTBEAT_TIMEOUT_MS", "5000");
        return e;
    }
}
