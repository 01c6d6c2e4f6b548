package dev.jtrain.cli;

import dev.jtrain.comm.engine.ClusterEngines;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.engine.NodeLayout;
import dev.jtrain.comm.engine.RankLayout;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How {@code jtrain launch} reads its role from the engine's node layout. */
class LaunchCommandTest {
    private static Optional<NodeLayout> slurmNode(int node, int nodes) {
        return Optional.of(new NodeLayout("Slurm", node, nodes, 1, "jt-node1", 29500, null));
    }

    @Test
    void aNodeOfTheStepPastNnodesIsASpareAndTheOthersAreTheJobsNodes() {
        // srun -N3 --ntasks-per-node=1 jtrain launch --nnodes 2: nodes 0 and 1 run the job, node 2 stands by
        assertThat(LaunchCommand.spareByLayout(slurmNode(2, 3), 2, null)).isTrue();
        assertThat(LaunchCommand.spareByLayout(slurmNode(3, 4), 2, null)).as("every node past --nnodes").isTrue();
        assertThat(LaunchCommand.spareByLayout(slurmNode(1, 3), 2, null)).isFalse();
        assertThat(LaunchCommand.spareByLayout(slurmNode(0, 3), 2, null)).isFalse();
    }

    @Test
    void withoutNnodesAGivenNodeRankOrAnEngineNoNodeIsASpare() {
        assertThat(LaunchCommand.spareByLayout(slurmNode(2, 3), null, null)).as("the engine's node count is the job's").isFalse();
        assertThat(LaunchCommand.spareByLayout(slurmNode(2, 3), 2, 1)).as("--node-rank wins over the engine").isFalse();
        assertThat(LaunchCommand.spareByLayout(Optional.empty(), 2, null)).isFalse();
    }

    /** Task {@code procId} of a Slurm step over jt-node[1-2] with {@code tasks} tasks ({@code perNode}: Slurm's form). */
    private static EngineEnv slurmTask(int procId, int nodeId, int localId, int tasks, String perNode) {
        Map<String, String> env = new HashMap<>(Map.of("SLURM_JOB_ID", "4242", "SLURM_STEP_ID", "3",
                "SLURM_PROCID", Integer.toString(procId), "SLURM_NODEID", Integer.toString(nodeId),
                "SLURM_LOCALID", Integer.toString(localId), "SLURM_STEP_NUM_TASKS", Integer.toString(tasks),
                "SLURM_STEP_NUM_NODES", "2", "SLURM_STEP_NODELIST", "jt-node[1-2]", "SLURM_JOB_NODELIST", "jt-node[1-2]",
                "SLURM_STEP_TASKS_PER_NODE", perNode));
        env.put("JTRAIN_JOB_TOKEN", "t");
        return EngineEnv.of(env, "jt-node" + (nodeId + 1));
    }

    /**
     * {@code srun -N2 --ntasks-per-node=2 jtrain launch}: four launchers would each run a one-node job and train
     * alone; refused, naming the rank and what to run instead. One task per node is the launcher's way.
     */
    @Test
    void aLauncherStartedAsOneOfSeveralRanksPerNodeIsRefused() {
        EngineEnv twoPerNode = slurmTask(3, 1, 1, 4, "2(x2)");
        assertThatThrownBy(() -> LaunchCommand.requireOncePerNode(twoPerNode, ClusterEngines.nodeLayout(twoPerNode)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("slurm started it as rank 3 of 4").hasMessageContaining("--ntasks-per-node=1");
        EngineEnv onePerNode = slurmTask(1, 1, 0, 2, "1(x2)");
        assertThat(ClusterEngines.nodeLayout(onePerNode)).isPresent();
        assertThatCode(() -> LaunchCommand.requireOncePerNode(onePerNode, ClusterEngines.nodeLayout(onePerNode)))
                .doesNotThrowAnyException();
        EngineEnv none = EngineEnv.of(Map.of(), "h");
        assertThatCode(() -> LaunchCommand.requireOncePerNode(none, Optional.empty())).doesNotThrowAnyException();
    }

    /** {@code srun -n1 jtrain train --nproc 4}: the one task launches its 4 processes; without --nproc it trains. */
    @Test
    void aOneTaskStepWithNprocLaunchesItsProcesses() {
        Map<String, String> one = new HashMap<>(Map.of("SLURM_JOB_ID", "7", "SLURM_STEP_ID", "0", "SLURM_PROCID", "0",
                "SLURM_NODEID", "0", "SLURM_LOCALID", "0", "SLURM_STEP_NUM_TASKS", "1", "SLURM_STEP_NUM_NODES", "1",
                "SLURM_STEP_NODELIST", "jt-node1", "SLURM_JOB_NODELIST", "jt-node1", "SLURM_STEP_TASKS_PER_NODE", "1"));
        one.put("JTRAIN_JOB_TOKEN", "t");
        Optional<RankLayout> ranks = ClusterEngines.rankLayout(EngineEnv.of(one, "jt-node1"));
        assertThat(ranks).isPresent();
        assertThat(TrainCommand.loneTaskAskingForMore(ranks, 4)).isTrue();
        assertThat(TrainCommand.loneTaskAskingForMore(ranks, null)).as("no --nproc: the task trains").isFalse();
        assertThat(TrainCommand.loneTaskAskingForMore(ranks, 1)).isFalse();
        assertThat(TrainCommand.loneTaskAskingForMore(ClusterEngines.rankLayout(slurmTask(0, 0, 0, 4, "2(x2)")), 4))
                .as("a rank of a wider step is refused elsewhere, not relaunched").isFalse();
    }
}
