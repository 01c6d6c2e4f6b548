package dev.jtrain.optim;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** Linear warmup, then a half cosine from maxLr to minLr over the decay steps, then minLr (nanoGPT's get_lr). */
class CosineScheduleTest {
    final CosineSchedule s = new CosineSchedule(1.0f, 0.1f, 10, 110);

    @Test
    void warmupRisesLinearlyToMaxLr() {
        for (int t = 0; t < 10; t++) assertThat(s.lr(t)).as("step %d", t).isCloseTo((t + 1) / 10f, within(1e-6f));
    }

    @Test
    void decayFollowsTheHalfCosineFromMaxToMin() {
        assertThat(s.lr(10)).isCloseTo(1.0f, within(1e-6f));
        assertThat(s.lr(60)).as("half way: the mean of max and min").isCloseTo(0.55f, within(1e-6f));
        assertThat(s.lr(35)).as("a quarter: min + (max-min)(1+cos(pi/4))/2").isCloseTo((float) (0.1 + 0.9 * (1 + Math.cos(Math.PI / 4)) / 2), within(1e-6f));
        for (int t = 11; t <= 110; t++) assertThat(s.lr(t)).as("step %d", t).isLessThan(s.lr(t - 1));
    }

    @Test
    void afterDecayStaysAtMinLr() {
        assertThat(s.lr(110)).isEqualTo(0.1f);
        assertThat(s.lr(10_000)).isEqualTo(0.1f);
    }

    @Test
    void noWarmupStartsAtMaxLr() {
        assertThat(new CosineSchedule(2f, 0f, 0, 4).lr(0)).isEqualTo(2f);
    }

    @Test
    void invalidSchedulesAreRefusedNamingTheValues() {
        assertThatThrownBy(() -> new CosineSchedule(1f, 2f, 0, 10)).hasMessageContaining("minLr=2.0");
        assertThatThrownBy(() -> new CosineSchedule(1f, 0f, 20, 10)).hasMessageContaining("warmupSteps=20");
        assertThatThrownBy(() -> new CosineSchedule(0f, 0f, 0, 10)).hasMessageContaining("maxLr=0.0");
    }
}
