package dev.jtrain.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class PeakFlopsTest {
    @TempDir
    Path dir;

    /**
     * A peak measured on busy cores (here 53 GFLOP/s where the machine does 100) was cached and never measured again,
     * so every later run reported MFU above 100%. The first start measures and caches; later starts use the cache
     * without measuring; a run that beat the cached peak measures again and raises it, never lowers it.
     */
    @Test
    void aCachedPeakThatTrainingBeatIsMeasuredAgainAndOnlyEverRaised() throws Exception {
        Path cache = dir.resolve("jtrain").resolve("peak-gflops.json");
        AtomicInteger measured = new AtomicInteger();
        assertThat(PeakFlops.measure(cache, 1, t -> { measured.incrementAndGet(); return 53.4; })).isEqualTo(53.4e9);
        assertThat(PeakFlops.measure(cache, 1, t -> { measured.incrementAndGet(); return 999; })).isEqualTo(53.4e9);
        assertThat(measured).hasValue(1);

        assertThat(PeakFlops.remeasureAfterBeaten(53.4e9, cache, 1, t -> 100.5)).isEqualTo(100.5e9);
        assertThat(PeakFlops.measure(cache, 1, t -> 0)).isEqualTo(100.5e9);
        assertThat(PeakFlops.remeasureAfterBeaten(100.5e9, cache, 1, t -> 70)).isEqualTo(70e9); // busy again: not cached
        assertThat(PeakFlops.measure(cache, 1, t -> 0)).isEqualTo(100.5e9);
        assertThat(PeakFlops.measure(cache, 2, t -> 190)).isEqualTo(190e9); // per thread count
        assertThat(Files.readString(cache)).contains("threads-1", "threads-2");
    }
}
