package dev.jtrain.spark;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RankEnvTest {
    @Test
    void ranksOnOneHostAreNumberedInRankOrderAndHostsByTheirLowestRank() {
        List<String> hosts = List.of("b", "a", "b", "a", "c");
        assertThat(RankEnv.of(0, hosts, 4000)).containsAllEntriesOf(Map.of("RANK", "0", "WORLD_SIZE", "5", "LOCAL_RANK", "0",
                "LOCAL_WORLD_SIZE", "2", "JTRAIN_NODE_RANK", "0", "JTRAIN_NNODES", "3", "MASTER_ADDR", "b", "MASTER_PORT", "4000"));
        assertThat(RankEnv.of(3, hosts, 4000)).containsEntry("LOCAL_RANK", "1").containsEntry("LOCAL_WORLD_SIZE", "2")
                .containsEntry("JTRAIN_NODE_RANK", "1").containsEntry("MASTER_ADDR", "b");
        assertThat(RankEnv.of(2, hosts, 4000)).containsEntry("LOCAL_RANK", "1").containsEntry("JTRAIN_NODE_RANK", "0");
        assertThat(RankEnv.of(4, hosts, 4000)).containsEntry("LOCAL_RANK", "0").containsEntry("LOCAL_WORLD_SIZE", "1")
                .containsEntry("JTRAIN_NODE_RANK", "2");
    }

    @Test
    void rejectsARankOutsideTheStageAndABadPort() {
        assertThatThrownBy(() -> RankEnv.of(2, List.of("a", "b"), 4000)).hasMessageContaining("rank 2 outside 0..1");
        assertThatThrownBy(() -> RankEnv.of(0, List.of("a"), 0)).hasMessageContaining("store port out of range");
    }

    @Test
    void hostOfASparkTaskAddress() {
        assertThat(RankEnv.hostOf("10.0.0.7:41234")).isEqualTo("10.0.0.7");
        assertThat(RankEnv.hostOf("worker-3.example:7337")).isEqualTo("worker-3.example");
        assertThat(RankEnv.hostOf("[fd00::5]:7337")).isEqualTo("fd00::5");
        assertThat(RankEnv.hostOf("fd00::5")).isEqualTo("fd00::5");
    }

    @Test
    void optionsRefuseVariablesTheStageSetsAndDataTwice() {
        assertThatThrownBy(() -> new SparkTrainOptions("/j", "/x.jar", null, List.of("train"), "t", false, Map.of("RANK", "3")))
                .hasMessageContaining("must not set RANK");
        assertThatThrownBy(() -> new SparkTrainOptions("/j", "/x.jar", null, List.of("train", "--data", "/c.txt"), "t", true, null))
                .hasMessageContaining("drop --data");
        assertThat(new SparkTrainOptions("/j", "/x.jar", null, List.of("train"), "t", false, null).jvmArgs())
                .contains("jdk.incubator.vector");
    }
}
