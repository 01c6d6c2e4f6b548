package dev.jtrain.comm;

import dev.jtrain.comm.algo.Collective;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The environment is read once, into options; a forced algorithm is the one that runs. */
@Timeout(60)
class ProcessGroupOptionsTest {
    @Test
    void environmentVariablesBecomeOptions() {
        ProcessGroupOptions o = ProcessGroupOptions.fromEnv(Map.of(
                "JTRAIN_ALGO", "allreduce:naive,broadcast:chain",
                "JTRAIN_DEBUG", "detail",
                "JTRAIN_CHUNK_BYTES", "65536",
                "JTRAIN_COMM_TIMEOUT_MS", "1234"));
        assertThat(o.algorithms()).containsExactlyInAnyOrderEntriesOf(Map.of(Collective.ALL_REDUCE, "naive", Collective.BROADCAST, "chain"));
        assertThat(o.debugDetail()).isTrue();
        assertThat(o.chunkBytes()).isEqualTo(65536);
        assertThat(o.timeoutMs()).isEqualTo(1234);
        assertThat(ProcessGroupOptions.fromEnv(Map.of())).isEqualTo(ProcessGroupOptions.defaults());
    }

    @Test
    void badValuesAreRefusedNamingTheVariable() {
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_ALGO", "allreduce")))
                .hasMessageContaining("JTRAIN_ALGO").hasMessageContaining("collective:algorithm");
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_ALGO", "allreduce:warp")))
                .hasMessageContaining("warp");
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_CHUNK_BYTES", "lots")))
                .hasMessageContaining("JTRAIN_CHUNK_BYTES=lots");
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_DEBUG", "VERBOSE")))
                .hasMessageContaining("JTRAIN_DEBUG=VERBOSE");
    }

    /** The cost model would pick another algorithm for this call; JTRAIN_ALGO's choice runs and the result is right. */
    @Test
    void forcedAllReduceAlgorithmFromTheEnvironmentIsTheOneThatRuns() throws Exception {
        Map<String, String> chosen = new ConcurrentHashMap<>();
        for (String env : new String[]{null, "allreduce:naive"}) {
            ProcessGroupOptions o = (env == null ? ProcessGroupOptions.fromEnv(Map.of()) : ProcessGroupOptions.fromEnv(Map.of("JTRAIN_ALGO", env)))
                    .withCostModel(LocalRanks.MODEL);
            LocalRanks.run(3, o, 10_000, g -> {
                float[] a = new float[4096];
                java.util.Arrays.fill(a, g.rank() + 1);
                Work w = g.allReduceAsync(a, 0, a.length, ReduceOp.SUM);
                w.waitFor();
                assertThat(a).containsOnly(6f);
                if (g.rank() == 0) chosen.put(String.valueOf(env), w.description().replaceAll(".*algo=(\\w+).*", "$1"));
            });
        }
        assertThat(chosen.get("allreduce:naive")).isEqualTo("naive");
        assertThat(chosen.get("null")).as("the cost model's own choice").isNotEqualTo("naive");
    }
}
