package dev.jtrain.cli;

import dev.jtrain.train.CheckpointMetrics;
import dev.jtrain.train.EvalMetrics;
import dev.jtrain.train.StepMetrics;
import dev.jtrain.train.TrainListener;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Renders training progress (step, loss, tokens/s, MFU, ETA) as a terminal progress bar and records every step
 * and evaluation to the metrics JSONL; keeps the series for the loss plot. Without a terminal (CI, pipes) it
 * prints a plain line every {@code every} steps instead.
 */
final class ProgressReporter implements TrainListener, AutoCloseable {
    private final MetricsLog log;
    private final ProgressBar bar;
    private final PrintStream plain;
    private final int maxSteps;
    private final double maxSeconds;
    private final int every;
    final List<Integer> steps = new ArrayList<>();
    final List<Float> losses = new ArrayList<>();
    final List<Integer> evalSteps = new ArrayList<>();
    final List<Float> valLosses = new ArrayList<>();
    /** The best step's MFU: above 1, the peak it is measured against must be too low. */
    double maxMfu;

    ProgressReporter(MetricsLog log, int maxSteps, double maxSeconds, boolean fancy, int every) {
        this.log = log;
        this.maxSteps = maxSteps;
        this.maxSeconds = maxSeconds;
        this.every = Math.max(1, every);
        if (fancy) {
            this.bar = new ProgressBarBuilder().setTaskName("train").setInitialMax(maxSteps)
                    .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(250).continuousUpdate()
                    .setMaxRenderedLength(140).build();
            this.plain = null;
        } else {
            this.bar = null;
            this.plain = System.out;
        }
    }

    @Override
    public void onStep(StepMetrics m) {
        log.write("step", m);
        steps.add(m.step());
        losses.add(m.loss());
        maxMfu = Math.max(maxMfu, m.mfu());
        double perStep = m.elapsedSeconds() / (m.step() + 1);
        double eta = (maxSteps - m.step() - 1) * perStep;
        if (maxSeconds > 0) eta = Math.min(eta, Math.max(0, maxSeconds - m.elapsedSeconds()));
        String msg = String.format("loss %.4f | %,.0f tok/s | MFU %.1f%% | %.0f ms/step (compute %.0f, comm %.0f, optim %.0f) | ETA %s",
                m.loss(), m.tokensPerSecond(), 100 * m.mfu(), m.stepMs(), m.computeMs(), m.commMs(), m.optimMs(), formatSeconds(eta));
        if (bar != null) {
            bar.stepTo(m.step() + 1);
            bar.setExtraMessage(msg);
        } else if (m.step() % every == 0) {
            plain.printf("step %5d | %s%n", m.step(), msg);
        }
    }

    @Override
    public void onEval(EvalMetrics m) {
        log.write("eval", m);
        evalSteps.add(m.step());
        valLosses.add(m.valLoss());
        String line = String.format("eval @ step %d: train loss %.4f, val loss %.4f", m.step(), m.trainLoss(), m.valLoss());
        show(line);
    }

    @Override
    public void onCheckpoint(CheckpointMetrics m) {
        log.write("checkpoint", m);
        String line = String.format("%scheckpoint step-%06d committed in %.2f s: %.1f MiB written by this rank; training blocked %.0f ms%s",
                "disk".equals(m.tier()) ? "" : m.tier() + " ", m.step(), m.commitSeconds(), m.bytesWritten() / 1048576.0, m.blockedMs() + m.snapshotWaitMs(),
                m.async() ? String.format(" (save %.0f + snapshot wait %.0f), background CPU %.0f ms", m.blockedMs(), m.snapshotWaitMs(), m.writeCpuMs()) : "");
        show(line);
    }

    @Override
    public void onCheckpointFailed(String tier, int step, String why) {
        log.write("checkpoint_failed", Map.of("tier", tier, "step", step, "why", why));
        String line = String.format("%s checkpoint at step %d failed; training goes on (the other tiers keep theirs): %s", tier, step, why);
        show(line);
    }

    @Override
    public void onCheckpointNote(String tier, int step, String note) {
        log.write("checkpoint_note", Map.of("tier", tier, "step", step, "note", note));
        String line = String.format("%s checkpoint step-%06d %s", tier, step, note);
        show(line);
    }

    /** A line beside the progress bar, or on its own line without one. */
    private void show(String line) {
        if (bar != null) bar.setExtraMessage(line);
        else plain.println(line);
    }

    static String formatSeconds(double s) {
        long t = Math.round(s);
        return t >= 3600 ? String.format("%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60) : String.format("%d:%02d", t / 60, t % 60);
    }

    @Override
    public void close() {
        if (bar != null) bar.close();
    }
}
