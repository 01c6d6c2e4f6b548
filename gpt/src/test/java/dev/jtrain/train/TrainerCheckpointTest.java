package dev.jtrain.train;

import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.SlowSnapshots;
import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.checkpoint.LoadOptions;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.data.Batch;
import dev.jtrain.tensor.Rng;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The trainer resumes exactly: 2N steps straight vs N steps with a checkpoint, a fresh trainer and model (different
 * seed), resume and the rest: identical losses and parameters bit for bit, with dropout on (the RNG state travels in
 * the trainer's checkpoint state) and a cosine schedule (a function of the restored step).
 */
@Timeout(120)
class TrainerCheckpointTest {
    static final long SEED = 1234L;
    static final GptConfig MODEL = new GptConfig(2, 2, 16, 8, 40, 0.1f, true);

    @TempDir
    Path dir;

    static TrainConfig config(int steps) {
        return new TrainConfig(MODEL, 4, 1, steps, 0, 3e-3f, 3e-4f, 2, 0.1f, 1.0f, 0, 1, SEED, false, 1e9, 0);
    }

    static Batch batch(long step) {
        Rng rng = new Rng(SEED * 31 + step);
        int[] x = new int[4 * 8], y = new int[4 * 8];
        for (int i = 0; i < x.length; i++) {
            x[i] = rng.nextInt(40);
            y[i] = (3 * x[i] + 1) % 40;
        }
        return new Batch(x, y, 4, 8);
    }

    static TrainListener recorder(List<Float> into) {
        return new TrainListener() {
            @Override public void onStep(StepMetrics m) { into.add(m.loss()); }
        };
    }

    @Test
    void everyCommittedCheckpointIsReportedOnceWithWhatItCost() throws IOException {
        for (boolean async : new boolean[]{false, true}) {
            Gpt g = new Gpt(MODEL, SEED);
            Trainer t = new Trainer(config(7), g, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
            List<CheckpointMetrics> seen = new ArrayList<>();
            Path d = dir.resolve(async ? "async" : "sync");
            try (Checkpointer c = new Checkpointer(null)) {
                t.setCheckpointing(c, d, 2, async, 0);
                t.run(new TrainListener() {
                    @Override public void onCheckpoint(CheckpointMetrics m) { seen.add(m); }
                });
            }
            assertThat(seen).extracting(CheckpointMetrics::step).containsExactly(2, 4, 6);
            long stateBytes = 3L * 4 * t.parameters().data().length; // parameters and AdamW's two moments
            double previousCommitMs = 0, blockedSum = 0, commitSum = 0;
            for (CheckpointMetrics m : seen) {
                assertThat(m.async()).isEqualTo(async);
                assertThat(m.bytesWritten()).isEqualTo(stateBytes);
                assertThat(m.commitSeconds()).isPositive();
                // a sync save blocks for all of it (timed around the call, so a little more); an async one for its call
                // and for what was left of the previous save (at most that save's whole time), plus a millisecond of slop
                if (async) assertThat(m.blockedMs()).isPositive().isLessThan(m.commitSeconds() * 1e3 + previousCommitMs + 1);
                else assertThat(m.blockedMs()).isGreaterThanOrEqualTo(m.commitSeconds() * 1e3);
                previousCommitMs = m.commitSeconds() * 1e3;
                blockedSum += m.blockedMs();
                commitSum += m.commitSeconds() * 1e3;
                assertThat(m.snapshotWaitMs()).isGreaterThanOrEqualTo(0);
                if (!async) assertThat(m.snapshotWaitMs()).isZero();
            }
            // over the run, async saves block for less than they take (a save that blocked like a sync one would not)
            if (async) assertThat(blockedSum).isLessThan(commitSum);
            assertThat(CheckpointDirectory.steps(d)).hasSize(3);
        }
    }

    /**
     * The snapshot is held back {@code delayMs} before it copies ({@link SlowSnapshots}), far longer than this model's
     * forward and backward: the checkpoint holds the parameters of the step it was taken at only because the next
     * optimizer step waits for the copy. A save that waited for the copy itself would block for at least the delay.
     */
    @Test
    void theOptimizerStepWaitsForAnOverlappedSnapshot() {
        Gpt g = new Gpt(MODEL, SEED);
        Trainer t = new Trainer(config(4), g, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        float[][] atSave = new float[1][];
        List<CheckpointMetrics> seen = new ArrayList<>();
        long delayMs = 1_000;
        try (Checkpointer c = SlowSnapshots.checkpointer(null, delayMs)) {
            t.setCheckpointing(c, dir, 2, true, 0);
            t.run(new TrainListener() {
                @Override public void onStep(StepMetrics m) {
                    if (m.step() == 1) atSave[0] = t.parameters().data().clone(); // what step-000002 must hold
                }

                @Override public void onCheckpoint(CheckpointMetrics m) { seen.add(m); }
            });
        }
        assertThat(seen).extracting(CheckpointMetrics::step).containsExactly(2, 4);
        assertThat(seen.get(0).snapshotWaitMs()).as("the fence waited for the held-back copy").isPositive();
        assertThat(seen.get(0).blockedMs()).as("save itself returned before the copy").isLessThan(delayMs);
        Trainer back = new Trainer(config(4), new Gpt(MODEL, SEED + 7), TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        try (Checkpointer c = new Checkpointer(null)) {
            back.resume(c, dir.resolve("step-000002"), LoadOptions.latest());
        }
        assertThat(back.parameters().data()).containsExactly(atSave[0]);
    }

    @Test
    void resumeAfterACheckpointTrainsBitwiseLikeAnUninterruptedRun() throws IOException {
        System.out.println("TrainerCheckpointTest seed=" + SEED);
        List<Float> straight = new ArrayList<>();
        Gpt a = new Gpt(MODEL, SEED);
        Trainer ta = new Trainer(config(8), a, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        ta.run(recorder(straight));

        // the interrupted run: same 8-step schedule, checkpoints every 2 steps (async), killed during step 5
        Gpt b = new Gpt(MODEL, SEED);
        Trainer tb = new Trainer(config(8), b, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        try (Checkpointer c = new Checkpointer(null)) {
            tb.setCheckpointing(c, dir, 2, true, 2);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> tb.run(new TrainListener() {
                @Override public void onStep(StepMetrics m) {
                    if (m.step() == 5) throw new IllegalStateException("killed");
                }
            })).hasMessage("killed");
        }
        assertThat(CheckpointDirectory.latest(dir)).contains(dir.resolve("step-000004"));
        assertThat(CheckpointDirectory.steps(dir)).hasSize(2);

        List<Float> rest = new ArrayList<>();
        Gpt c2 = new Gpt(MODEL, SEED + 99);
        Trainer tc = new Trainer(config(8), c2, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        try (Checkpointer c = new Checkpointer(null)) {
            tc.resume(c, dir, LoadOptions.latest());
        }
        assertThat(tc.startStep()).isEqualTo(4);
        tc.run(recorder(rest));
        assertThat(rest).containsExactlyElementsOf(straight.subList(4, 8));
        assertThat(tc.parameters().data()).containsExactly(ta.parameters().data());
    }
}
