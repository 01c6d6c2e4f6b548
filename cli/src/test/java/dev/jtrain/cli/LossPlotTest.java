package dev.jtrain.cli;

import org.junit.jupiter.api.Test;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Plots are written under target/ (loss-plot-N.png) so a person can look at them. */
class LossPlotTest {
    @Test
    void plotsOfShortMediumAndLongRunsRender() throws Exception {
        for (int n : new int[]{4, 999, 9_999, 123_457}) render(n);
    }

    private static void render(int n) throws Exception {
        List<Integer> steps = new ArrayList<>(), evalSteps = new ArrayList<>();
        List<Float> train = new ArrayList<>(), val = new ArrayList<>();
        for (int s = 0; s < n; s++) {
            steps.add(s);
            train.add((float) (2 + 3 * Math.exp(-s * 6.0 / n)));
            if (s % Math.max(1, n / 25) == 0) {
                evalSteps.add(s);
                val.add((float) (2.1 + 3 * Math.exp(-s * 6.0 / n)));
            }
        }
        Path png = Path.of("target", "loss-plot-" + n + ".png");
        Files.createDirectories(png.getParent());
        LossPlot.write(png, "jtrain 12L/768 on corpus.txt", steps, train, evalSteps, val);
        BufferedImage img = ImageIO.read(png.toFile());
        assertThat(img.getWidth()).isEqualTo(900);
        assertThat(img.getHeight()).isEqualTo(520);
    }

    /** Long runs count the axis in thousands or millions, so labels stay short integers, never "1.8E4". */
    @Test
    void theStepAxisCountsInAUnitThatKeepsLabelsShort() {
        assertThat(LossPlot.stepUnit(300)).isEqualTo(1);
        assertThat(LossPlot.stepUnit(999)).isEqualTo(1);
        assertThat(LossPlot.stepUnit(9_999)).isEqualTo(1_000);
        assertThat(LossPlot.stepUnit(123_456)).isEqualTo(1_000);
        assertThat(LossPlot.stepUnit(20_000_000)).isEqualTo(1_000_000);
        assertThat(LossPlot.stepAxisTitle(1_000)).isEqualTo("step (thousands)");
        assertThat(LossPlot.roundUp(3)).isEqualTo(3);
        assertThat(LossPlot.roundUp(999)).isEqualTo(1000);
        assertThat(LossPlot.roundUp(123.457)).isCloseTo(150, org.assertj.core.api.Assertions.within(1e-9));
        assertThat(LossPlot.roundUp(20)).isEqualTo(20);
        assertThat(LossPlot.roundUp(7)).isEqualTo(8);
    }
}
