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

    static void write(Path png, String title, List<Integer> steps, List<Float> train, List<Integer> evalSteps, List<Float> val)
            throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder().width(900).height(520).title(title).xAxisTitle("step").yAxisTitle("loss (nats/token)").build();
        chart.getStyler().setMarkerSize(4);
        if (!steps.isEmpty()) {
            XYSeries s = chart.addSeries("train", steps, train);
            s.setMarker(SeriesMarkers.NONE);
        }
        if (!evalSteps.isEmpty()) chart.addSeries("val", evalSteps, val);
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
