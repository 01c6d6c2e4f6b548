package dev.jtrain.cli;

import dev.jtrain.comm.engine.NodeLayout;
import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

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
}
