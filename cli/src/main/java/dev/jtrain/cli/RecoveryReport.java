package dev.jtrain.cli;

import dev.jtrain.train.CheckpointMetrics;
import dev.jtrain.train.EvalMetrics;
import dev.jtrain.train.StepMetrics;
import dev.jtrain.train.TrainListener;

import java.io.PrintStream;

/** Reports a restarted run's {@link RecoveryTimeline} when its first step finishes, then steps aside. */
final class RecoveryReport implements TrainListener {
    private final RecoveryTimeline timeline;
    private final RecoveryTimeline.Startup startup;
    private final long loadedAtMs, resumedStep, lastStepBefore;
    private final String resumedFrom;
    private final TrainListener inner;
    private final MetricsLog log;
    private final PrintStream console;
    private boolean reported;

    RecoveryReport(RecoveryTimeline timeline, RecoveryTimeline.Startup startup, long loadedAtMs, long resumedStep, String resumedFrom, long lastStepBefore, TrainListener inner,
                   MetricsLog log, PrintStream console) {
        this.timeline = timeline;
        this.startup = startup;
        this.loadedAtMs = loadedAtMs;
        this.resumedStep = resumedStep;
        this.resumedFrom = resumedFrom;
        this.lastStepBefore = lastStepBefore;
        this.inner = inner;
        this.log = log;
        this.console = console;
    }

    @Override
    public void onStep(StepMetrics m) {
        if (!reported) {
            reported = true;
            RecoveryTimeline.Phases p = timeline.phases(startup, loadedAtMs, System.currentTimeMillis(), resumedStep, resumedFrom, lastStepBefore);
            log.write("recovery", p.record());
            console.println(p.line());
        }
        inner.onStep(m);
    }

    @Override public void onEval(EvalMetrics m) { inner.onEval(m); }

    @Override public void onCheckpoint(CheckpointMetrics m) { inner.onCheckpoint(m); }

    @Override public void onCheckpointFailed(String tier, int step, String why) { inner.onCheckpointFailed(tier, step, why); }

    @Override public void onCheckpointNote(String tier, int step, String note) { inner.onCheckpointNote(tier, step, note); }
}
