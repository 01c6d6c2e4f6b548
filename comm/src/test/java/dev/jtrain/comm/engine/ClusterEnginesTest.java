package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Detection from each engine's variables as its processes see them (the Slurm and Open MPI sets were read from
 * real tasks under srun and salloc + mpirun on the emulated hosts; Kubernetes' are what the Kubeflow trainer and an
 * Indexed Job set, as there is no cluster here).
 */
class ClusterEnginesTest {
    private static final String TOKEN = "secret";

    /** Task {@code procId} of {@code srun -N2 --ntasks-per-node=...} on jt-node[1-2], job 4242 step 3. */
    static Map<String, String> slurmTask(int procId, int nodeId, int localId, String tasksPerNode, int tasks) {
        Map<String, String> env = new HashMap<>();
        env.put("SLURM_JOB_ID", "4242");
        env.put("SLURM_STEP_ID", "3");
        env.put("SLURM_PROCID", Integer.toString(procId));
        env.put("SLURM_NODEID", Integer.toString(nodeId));
        env.put("SLURM_LOCALID", Integer.toString(localId));
        env.put("SLURM_STEP_NUM_TASKS", Integer.toString(tasks));
        env.put("SLURM_STEP_NUM_NODES", "2");
        env.put("SLURM_STEP_NODELIST", "jt-node[1-2]");
        env.put("SLURM_JOB_NODELIST", "jt-node[1-2]");
        env.put("SLURM_STEP_TASKS_PER_NODE", tasksPerNode);
        env.put("JTRAIN_JOB_TOKEN", TOKEN);
        return env;
    }

    private static RankLayout ranks(Map<String, String> env, String host) {
        return ClusterEngines.rankLayout(EngineEnv.of(env, host)).orElseThrow();
    }

    @Test
    void slurmTasksAreRanksAndTheFirstNodesLocalTaskZeroHostsTheStore() {
        RankLayout r0 = ranks(slurmTask(0, 0, 0, "2(x2)", 4), "jt-node1");
        RankLayout r3 = ranks(slurmTask(3, 1, 1, "2(x2)", 4), "jt-node2");
        assertThat(r0.engine()).isEqualTo("slurm");
        assertThat(r0.store()).isEqualTo(new StoreAddress("jt-node1", 10000 + 4242 % 1400 * 16 + 3, true));
        assertThat(r3.store().hostedHere()).isFalse();
        assertThat(r3.store().host()).isEqualTo("jt-node1");
        assertThat(r3).extracting(RankLayout::rank, RankLayout::worldSize, RankLayout::localRank, RankLayout::localWorldSize,
                RankLayout::nodeRank, RankLayout::nnodes).containsExactly(3, 4, 1, 2, 1, 2);
        assertThat(r3.jobToken()).isEqualTo(TOKEN);
    }

    @Test
    void slurmUnevenTasksPerNodeGiveEachNodeItsOwnLocalWorldSize() {
        RankLayout a = ranks(slurmTask(2, 0, 2, "3,1", 4), "jt-node1");
        RankLayout b = ranks(slurmTask(3, 1, 0, "3,1", 4), "jt-node2");
        assertThat(a.localWorldSize()).isEqualTo(3);
        assertThat(b.localWorldSize()).isEqualTo(1);
        assertThat(b.localRank()).isZero();
        assertThat(ranks(slurmTask(0, 0, 0, "3,1", 4), "jt-node1").store().hostedHere()).isTrue();
    }

    @Test
    void slurmPortsDifferAcrossStepsAndConsecutiveJobsAndMasterPortWins() {
        var a = slurmTask(0, 0, 0, "2(x2)", 4);
        var b = new HashMap<>(a);
        b.put("SLURM_STEP_ID", "4");
        var c = new HashMap<>(a);
        c.put("SLURM_JOB_ID", "4243");
        int pa = ranks(a, "h").store().port(), pb = ranks(b, "h").store().port(), pc = ranks(c, "h").store().port();
        assertThat(pa).isNotEqualTo(pb).isNotEqualTo(pc);
        assertThat(pb).isNotEqualTo(pc);
        // below the kernel's ephemeral ports (32768-60999), which outgoing connections take
        for (int port : new int[] {pa, pb, pc}) assertThat(port).isBetween(10000, 32767);
        for (long job : new long[] {0, 1399, 4242, Long.MAX_VALUE}) {
            for (long step : new long[] {0, 15, 4294967294L}) {
                assertThat(StorePort.of(EngineEnv.of(Map.of(), "h"), "slurm", job, step)).isBetween(10000, 32767);
            }
        }
        assertThat(StorePort.ofKey(EngineEnv.of(Map.of(), "h"), "mpi", "1234567@1")).isBetween(10000, 32767);
        var d = new HashMap<>(a);
        d.put("MASTER_PORT", "23456");
        d.put("MASTER_ADDR", "10.0.0.9");
        RankLayout r = ranks(d, "jt-node1");
        assertThat(r.store()).isEqualTo(new StoreAddress("10.0.0.9", 23456, true));
    }

    /**
     * A one-node step on the job's second node, as a Slurm without SLURM_STEP_NODELIST describes it: SLURM_NODELIST
     * (the step's) places the store there, not SLURM_JOB_NODELIST's first node.
     */
    @Test
    void slurmReadsTheStepsNodeListBeforeTheJobs() {
        var env = slurmTask(0, 0, 0, "2", 2);
        env.remove("SLURM_STEP_NODELIST");
        env.put("SLURM_NODELIST", "jt-node2");
        env.put("SLURM_STEP_NUM_NODES", "1");
        RankLayout r = ranks(env, "jt-node2");
        assertThat(r.store().host()).isEqualTo("jt-node2");
        assertThat(r.nnodes()).isEqualTo(1);
    }

    @Test
    void slurmInconsistentVariablesAreNamed() {
        var env = slurmTask(0, 0, 0, "2,1", 4);
        assertThatThrownBy(() -> ranks(env, "h")).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("SLURM_STEP_TASKS_PER_NODE='2,1' adds up to 3").hasMessageContaining("SLURM_STEP_NUM_TASKS=4");
        var huge = slurmTask(0, 0, 0, "2147483647,1", 4);
        assertThatThrownBy(() -> ranks(huge, "h")).hasMessageContaining("adds up to 2147483648 tasks");
        var older = slurmTask(0, 0, 0, "2,1", 4); // without the step's variables: the fallbacks are named
        older.remove("SLURM_STEP_TASKS_PER_NODE");
        older.put("SLURM_TASKS_PER_NODE", "2,1");
        assertThatThrownBy(() -> ranks(older, "h")).hasMessageContaining("SLURM_TASKS_PER_NODE='2,1' adds up to 3");
        var noToken = slurmTask(0, 0, 0, "2(x2)", 4);
        noToken.remove("JTRAIN_JOB_TOKEN");
        assertThatThrownBy(() -> ranks(noToken, "h")).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("slurm").hasMessageContaining("JTRAIN_JOB_TOKEN");
        var badLocal = slurmTask(1, 1, 1, "3,1", 4);
        assertThatThrownBy(() -> ranks(badLocal, "h")).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("SLURM_LOCALID=1");
    }

    @Test
    void slurmOneTaskPerNodeDescribesNodesForALauncher() {
        var env = slurmTask(1, 1, 0, "1(x2)", 2);
        NodeLayout n = ClusterEngines.nodeLayout(EngineEnv.of(env, "jt-node2")).orElseThrow();
        assertThat(n).extracting(NodeLayout::engine, NodeLayout::nodeRank, NodeLayout::nnodes, NodeLayout::masterAddr)
                .containsExactly("slurm", 1, 2, "jt-node1");
        assertThat(n.masterPort()).isEqualTo(10000 + 4242 % 1400 * 16 + 3);
        assertThat(ClusterEngines.nodeLayout(EngineEnv.of(slurmTask(1, 0, 1, "2(x2)", 4), "jt-node1"))).isEmpty();
    }

    /** A rank under {@code salloc -N2 mpirun}: Open MPI's variables describe ranks, Slurm's the allocation. */
    static Map<String, String> ompiRankInSalloc(int rank, int local, String jobid) {
        Map<String, String> env = new HashMap<>();
        env.put("OMPI_COMM_WORLD_RANK", Integer.toString(rank));
        env.put("OMPI_COMM_WORLD_SIZE", "4");
        env.put("OMPI_COMM_WORLD_LOCAL_RANK", Integer.toString(local));
        env.put("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
        env.put("OMPI_MCA_orte_ess_jobid", jobid);
        env.put("SLURM_JOB_ID", "77");
        env.put("SLURM_JOB_NODELIST", "jt-node[1-2]");
        env.put("SLURM_NODEID", "0");
        env.put("SLURM_PROCID", "0");
        env.put("SLURM_STEP_NUM_TASKS", "2");
        env.put("SLURM_STEP_NODELIST", "jt-node[1-2]");
        env.put("SLURM_STEP_TASKS_PER_NODE", "1(x2)");
        env.put("JTRAIN_JOB_TOKEN", TOKEN);
        return env;
    }

    @Test
    void mpiWinsOverSlurmInsideAnAllocationAndTheFirstNodeHostsTheStore() {
        RankLayout r3 = ranks(ompiRankInSalloc(3, 1, "1234567"), "jt-node2");
        assertThat(r3.engine()).isEqualTo("mpi");
        assertThat(r3).extracting(RankLayout::rank, RankLayout::worldSize, RankLayout::localRank, RankLayout::localWorldSize)
                .containsExactly(3, 4, 1, 2);
        assertThat(r3.store().host()).isEqualTo("jt-node1");
        assertThat(r3.store().hostedHere()).isFalse();
        assertThat(ranks(ompiRankInSalloc(2, 0, "1234567"), "jt-node2").store().hostedHere()).isFalse();
        RankLayout r0 = ranks(ompiRankInSalloc(0, 0, "1234567"), "jt-node1.cluster.example");
        assertThat(r0.store().hostedHere()).isTrue();
        assertThat(r0.store().port()).isEqualTo(r3.store().port());
        assertThat(ranks(ompiRankInSalloc(0, 0, "1234568"), "jt-node1").store().port()).isNotEqualTo(r0.store().port());
    }

    @Test
    void mpiOnOneHostUsesLoopbackAndAcrossHostsWithoutAHintAsksForMasterAddr() {
        Map<String, String> env = new HashMap<>(Map.of("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "OMPI_MCA_orte_ess_jobid", "99",
                "JTRAIN_JOB_TOKEN", TOKEN));
        RankLayout r = ranks(env, "h");
        assertThat(r.store().host()).isEqualTo("127.0.0.1");
        assertThat(r.store().hostedHere()).isFalse();
        env.put("OMPI_COMM_WORLD_LOCAL_SIZE", "1");
        env.put("OMPI_COMM_WORLD_LOCAL_RANK", "0");
        assertThatThrownBy(() -> ranks(env, "h")).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("mpirun -x MASTER_ADDR=");
        env.put("MASTER_ADDR", "head");
        assertThat(ranks(env, "h").store().host()).isEqualTo("head");
    }

    @Test
    void hydraVariablesAreMpiToo() {
        var env = Map.of("PMI_RANK", "1", "PMI_SIZE", "2", "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "2", "PMI_KVSNAME", "kvs_1",
                "JTRAIN_JOB_TOKEN", TOKEN);
        assertThat(ranks(env, "h")).extracting(RankLayout::engine, RankLayout::rank, RankLayout::localRank).containsExactly("mpi", 1, 1);
    }

    /**
     * Hydra (MPICH, Intel MPI) under {@code salloc} may export no job id of its own: the store port comes from the Slurm
     * job id, the same on every rank, instead of asking for MASTER_PORT; with neither, it asks.
     */
    @Test
    void anMpiJobWithoutAnIdOfItsOwnTakesItsPortFromTheSlurmJob() {
        Map<String, String> env = new HashMap<>(Map.of("PMI_RANK", "0", "PMI_SIZE", "4", "MPI_LOCALRANKID", "0", "MPI_LOCALNRANKS", "2",
                "SLURM_JOB_ID", "4242", "SLURM_JOB_NODELIST", "jt-node[1-2]", "JTRAIN_JOB_TOKEN", TOKEN));
        RankLayout r0 = ranks(env, "jt-node1");
        env.putAll(Map.of("PMI_RANK", "3", "MPI_LOCALRANKID", "1"));
        RankLayout r3 = ranks(env, "jt-node2");
        assertThat(r0.store()).isEqualTo(new StoreAddress("jt-node1", r3.store().port(), true));
        assertThat(r3.store().hostedHere()).isFalse();
        env.put("SLURM_JOB_ID", "4243");
        assertThat(ranks(env, "jt-node2").store().port()).as("another job").isNotEqualTo(r3.store().port());
        env.remove("SLURM_JOB_ID");
        env.remove("SLURM_JOB_NODELIST");
        env.put("MASTER_ADDR", "jt-node1");
        assertThatThrownBy(() -> ranks(env, "jt-node2")).isInstanceOf(RendezvousConfigException.class).hasMessageContaining("MASTER_PORT");
    }

    @Test
    void jtrainVariablesWinOverEverythingElse() {
        var env = slurmTask(0, 0, 0, "1(x2)", 2);
        env.putAll(Map.of("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "jt-node1",
                "MASTER_PORT", "2000", "JTRAIN_STORE_IN_LAUNCHER", "1"));
        RankLayout r = ranks(env, "jt-node2");
        assertThat(r.engine()).isEqualTo("jtrain");
        assertThat(r.rank()).isEqualTo(3);
        assertThat(r.store()).isEqualTo(new StoreAddress("jt-node1", 2000, false));
    }

    @Test
    void kubeflowAndIndexedJobsDescribeNodes() {
        var pet = Map.of("PET_NNODES", "2", "PET_NODE_RANK", "1", "PET_NPROC_PER_NODE", "2", "PET_MASTER_ADDR", "job-node-0-0.job",
                "PET_MASTER_PORT", "29400", "JTRAIN_JOB_TOKEN", TOKEN);
        NodeLayout n = ClusterEngines.nodeLayout(EngineEnv.of(pet, "pod")).orElseThrow();
        assertThat(n).isEqualTo(new NodeLayout("kubernetes", 1, 2, 2, "job-node-0-0.job", 29400, TOKEN));
        assertThat(ClusterEngines.rankLayout(EngineEnv.of(pet, "pod"))).isEmpty();

        var indexed = Map.of("JOB_COMPLETION_INDEX", "0", "JTRAIN_NNODES", "3", "MASTER_ADDR", "jtrain-0.jtrain", "JTRAIN_JOB_TOKEN", TOKEN);
        assertThat(ClusterEngines.nodeLayout(EngineEnv.of(indexed, "pod"))).contains(
                new NodeLayout("kubernetes", 0, 3, 0, "jtrain-0.jtrain", 29500, TOKEN));
        var elastic = new HashMap<>(pet);
        elastic.put("PET_NNODES", "1:4");
        assertThatThrownBy(() -> ClusterEngines.nodeLayout(EngineEnv.of(elastic, "pod"))).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("elastic");
        var huge = new HashMap<>(pet);
        huge.put("PET_NPROC_PER_NODE", "99999999999");
        assertThatThrownBy(() -> ClusterEngines.nodeLayout(EngineEnv.of(huge, "pod"))).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("PET_NPROC_PER_NODE");
        var auto = new HashMap<>(pet);
        auto.put("PET_NPROC_PER_NODE", "auto");
        assertThat(ClusterEngines.nodeLayout(EngineEnv.of(auto, "pod")).orElseThrow().nprocPerNode()).isZero();
        var noMaster = new HashMap<>(indexed);
        noMaster.remove("MASTER_ADDR");
        assertThatThrownBy(() -> ClusterEngines.nodeLayout(EngineEnv.of(noMaster, "pod"))).hasMessageContaining("MASTER_ADDR");
    }

    /**
     * A Kubeflow PyTorchJob pod (training operator v1) has RANK = the pod's index and WORLD_SIZE = nodes x processes
     * beside the PET_* variables: a node, not a rank. Its launcher's children (LOCAL_RANK set) are jtrain ranks.
     */
    @Test
    void aKubeflowPodsOwnRankAndWorldSizeDescribeANodeNotARank() {
        Map<String, String> pod = new HashMap<>(Map.of("RANK", "1", "WORLD_SIZE", "8", "MASTER_ADDR", "job-master-0",
                "MASTER_PORT", "23456", "PET_NNODES", "2", "PET_NODE_RANK", "1", "PET_NPROC_PER_NODE", "4",
                "PET_MASTER_ADDR", "job-master-0", "PET_MASTER_PORT", "23456", "JTRAIN_JOB_TOKEN", TOKEN));
        assertThat(ClusterEngines.detect(EngineEnv.of(pod, "pod")).orElseThrow().name()).isEqualTo("kubernetes");
        assertThat(ClusterEngines.rankLayout(EngineEnv.of(pod, "pod"))).isEmpty();
        assertThat(ClusterEngines.nodeLayout(EngineEnv.of(pod, "pod")))
                .contains(new NodeLayout("kubernetes", 1, 2, 4, "job-master-0", 23456, TOKEN));

        Map<String, String> child = new HashMap<>(pod);
        child.putAll(Map.of("RANK", "5", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "MASTER_PORT", "29600"));
        RankLayout r = ranks(child, "pod");
        assertThat(r.engine()).isEqualTo("jtrain");
        assertThat(r).extracting(RankLayout::rank, RankLayout::worldSize, RankLayout::localRank).containsExactly(5, 8, 1);
    }

    /** A WORLD_SIZE left in a batch script's environment does not hide Slurm; on its own it asks for RANK. */
    @Test
    void aWorldSizeWithoutRankLeavesTheEngineThatStartedTheProcess() {
        var task = slurmTask(1, 0, 1, "2(x2)", 4);
        task.put("WORLD_SIZE", "4");
        assertThat(ranks(task, "jt-node1").engine()).isEqualTo("slurm");
        assertThatThrownBy(() -> ClusterEngines.rankLayout(EngineEnv.of(Map.of("WORLD_SIZE", "4"), "h")))
                .isInstanceOf(RendezvousConfigException.class).hasMessageContaining("RANK is not set");
    }

    @Test
    void noEngineMeansNoLayout() {
        assertThat(ClusterEngines.detect(EngineEnv.of(Map.of("PATH", "/bin"), "h"))).isEmpty();
        assertThat(ClusterEngines.rankLayout(EngineEnv.of(Map.of(), "h"))).isEmpty();
    }
}
