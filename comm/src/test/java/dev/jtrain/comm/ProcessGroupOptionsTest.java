package dev.jtrain.comm;

import dev.jtrain.comm.algo.Collective;
import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.algo.CostModelProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

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

    /** What a run prints after measuring reads back as the same figures, and pins them for the next start. */
    @Test
    void linkFiguresAsARunPrintsThemArePinnedFromTheEnvironment() {
        var printed = new CostModelProbe.LinkCosts(new CostModel(3.0e-6, 1 / 2.724e9, 1 / 4.707e9, 32L << 20),
                new CostModel(61.5e-6, 1 / 0.235e9, 1 / 4.707e9, 4L << 20)).format();
        assertThat(printed).isEqualTo("intra: alpha=3.0us beta=2.724GB/s gamma=4.707GB/s chunk=32768KiB; "
                + "inter: alpha=61.5us beta=0.235GB/s gamma=4.707GB/s chunk=4096KiB");
        var pinned = ProcessGroupOptions.fromEnv(Map.of("JTRAIN_LINK_COSTS", printed)).linkCosts();
        assertThat(pinned.intraHost().alphaSeconds()).isCloseTo(3.0e-6, within(1e-12));
        assertThat(1 / pinned.intraHost().betaSecondsPerByte()).isCloseTo(2.724e9, within(1.0));
        assertThat(1 / pinned.interHost().betaSecondsPerByte()).isCloseTo(0.235e9, within(1.0));
        assertThat(1 / pinned.interHost().gammaSecondsPerByte()).isCloseTo(4.707e9, within(1.0));
        assertThat(pinned.interHost().chunkBytes()).isEqualTo(4L << 20);
        assertThat(pinned.format()).isEqualTo(printed);
        // one class alone, other units, any order
        var intraOnly = CostModelProbe.LinkCosts.parse("intra: chunk=1MiB gamma=900MB/s beta=2000MB/s alpha=0.005ms");
        assertThat(intraOnly.interHost()).isNull();
        assertThat(intraOnly.format()).isEqualTo("intra: alpha=5.0us beta=2.000GB/s gamma=0.900GB/s chunk=1024KiB");
    }

    @Test
    void unreadableLinkFiguresAreRefusedNamingTheVariableAndThePart() {
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_LINK_COSTS", "intra: alpha=3us beta=2GB/s gamma=4GB/s")))
                .hasMessageContaining("JTRAIN_LINK_COSTS").hasMessageContaining("need all of alpha, beta, gamma and chunk");
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_LINK_COSTS", "intra: alpha=3GB/s beta=2GB/s gamma=4GB/s chunk=1KiB")))
                .hasMessageContaining("JTRAIN_LINK_COSTS").hasMessageContaining("cannot read 'alpha=3GB/s'");
        assertThatThrownBy(() -> ProcessGroupOptions.fromEnv(Map.of("JTRAIN_LINK_COSTS", "fabric: alpha=3us beta=2GB/s gamma=4GB/s chunk=1KiB")))
                .hasMessageContaining("'intra:'").hasMessageContaining("fabric");
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
