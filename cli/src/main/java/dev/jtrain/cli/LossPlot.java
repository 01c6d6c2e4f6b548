package dev.jtrain.cli;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** Writes the loss curve (train loss per step, validation loss per evaluation) as a PNG with XChart. */
final class LossPlot {
    private LossPlot() {}

    /**
     * The unit the step axis counts in: 1, 1000 or 10^6, so that labels stay at most 3 digits (plus one decimal).
     * In steps, XChart labels a 10^4-step run "556 1,112 1,668 ..." and a 10^5-step one "9E3 1.8E4 ...", ~70 px
     * apart: they run into each other.
     */
    static long stepUnit(long maxStep) { return maxStep >= 1_000_000 ? 1_000_000 : maxStep >= 1_000 ? 1_000 : 1; }

    static String stepAxisTitle(long unit) { return unit == 1 ? "step" : unit == 1_000 ? "step (thousands)" : "step (millions)"; }

    static void write(Path png, String title, List<Integer> steps, List<Float> train, List<Integer> evalSteps, List<Float> val)
            throws IOException {
        System.setProperty("java.awt.headless", "true");
        long maxStep = Math.max(steps.stream().mapToLong(Integer::longValue).max().orElse(0), evalSteps.stream().mapToLong(Integer::longValue).max().orElse(0));
        long unit = stepUnit(maxStep);
        XYChart chart = new XYChartBuilder().width(900).height(520).title(title).xAxisTitle(stepAxisTitle(unit))
                .yAxisTitle("loss (nats/token)").build();
        chart.getStyler().setMarkerSize(4);
        chart.getStyler().setXAxisDecimalPattern("#,##0.#");
        // An explicit range that ends on a round number: with the data's own bounds XChart puts a tick on every k-th
        // of its equally spaced x values (ticks 37, 74, 111 ... for 999 steps) instead of at round values
        chart.getStyler().setXAxisMin(0.0);
        // (at least 10 steps wide: a shorter axis gets half-step labels)
        chart.getStyler().setXAxisMax(roundUp(Math.max(unit == 1 ? 10.0 : 1.0, (double) maxStep / unit)));
        if (!steps.isEmpty()) {
            XYSeries s = chart.addSeries("train", scaled(steps, unit), train);
            s.setMarker(SeriesMarkers.NONE);
        }
        if (!evalSteps.isEmpty()) chart.addSeries("val", scaled(evalSteps, unit), val);
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    /** The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) at or above {@code v}: at most 25% unused. */
    static double roundUp(double v) {
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[]{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) if (m * p >= v - 1e-9 * p) return m * p;
        return 10 * p;
    }

    private static List<Double> scaled(List<Integer> steps, long unit) {
        return steps.stream().map(s -> (double) s / unit).toList();
    }
}
