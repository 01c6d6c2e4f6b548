package dev.jtrain.train;

import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.CheckpointerOptions;
import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage;
import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.gpt.Gpt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A run that checkpoints to disk every 4 steps and to the nodes' memory every 2 resumes from whichever holds the
 * newest step, memory first; when memory lost the shard (its node and its buddy both died) it falls back to disk,
 * saying why. Either way the resumed run ends bitwise as the uninterrupted one.
 */
@Timeout(120)
class TieredResumeTest {
    @TempDir
    Path dir;

    private static final int STEPS = 10;

    /**
     * Runs to step {@code steps} with both tiers over {@code holders} (this process on node 1), resuming first;
     * returns the parameters. A resumed run starts from a model of another seed: all it has must come from the load.
     */
    private float[] run(int crashAt, boolean resumed, List<InMemoryStore> holders, Path disk, List<String> log) {
        return run(crashAt, resumed, holders, disk, 4, log, null);
    }

    /** {@code atStep}, if given, runs after that step's metrics (to break the holders mid-run). */
    private float[] run(int crashAt, boolean resumed, List<InMemoryStore> holders, Path disk, int diskEvery, List<String> log,
                        java.util.function.IntConsumer atStep) {
        Gpt g = new Gpt(TrainerCheckpointTest.MODEL, TrainerCheckpointTest.SEED + (resumed ? 7 : 0));
        Trainer t = new Trainer(TrainerCheckpointTest.config(STEPS), g, TrainerCheckpointTest::batch, TrainerCheckpointTest::batch);
        PeerMemoryStorage memory = PeerMemoryStorage.over(holders, 1);
        try (Checkpointer d = new Checkpointer(null); Checkpointer m = new Checkpointer(null, CheckpointerOptions.defaults(), memory)) {
            CheckpointTier diskTier = new CheckpointTier("disk", d, disk, diskEvery, true, 0);
            CheckpointTier memTier = new CheckpointTier("memory", m, Path.of("ram"), 2, true, 2, true);
            t.addCheckpointTier(diskTier);
            t.addCheckpointTier(memTier);
            t.resumeNewest(List.of(memTier, diskTier), false).ifPresent(r -> {
                log.add("resumed from " + r.tier().name() + " at step " + r.report().step());
                log.addAll(r.fellBack());
            });
            try {
                t.run(new TrainListener() {
                    @Override public void onCheckpoint(CheckpointMetrics c) { log.add(c.tier() + " " + c.step()); }

                    @Override public void onStep(StepMetrics m) {
                        if (atStep != null) atStep.accept(m.step());
                        if (m.step() == crashAt) throw new IllegalStateException("crashed");
                    }

                    @Override public void onCheckpointFailed(String tier, int step, String why) { log.add(tier + " " + step + " failed: " + why); }
                });
            } catch (IllegalStateException crashed) {
                assertThat(crashed).hasMessage("crashed");
            }
        }
        return t.parameters().data().clone();
    }

    private static List<InMemoryStore> holders(int n) {
        List<InMemoryStore> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(new InMemoryStore(5_000));
        return out;
    }

    @Test
    void resumesFromTheNewestTierMemoryFirstAndFallsBackToDiskWhenMemoryLostTheShard() {
        float[] reference = run(STEPS, false, holders(3), dir.resolve("ref"), new ArrayList<>());

        // 1. crashed during step 7: memory holds step 6, disk step 4; memory wins
        List<InMemoryStore> h = holders(3);
        List<String> log = new ArrayList<>();
        run(7, false, h, dir.resolve("a"), log);
        // saves of steps 2 and 4 to memory were awaited by the next one, so reported; the crash may come before the
        // run reports disk's step 4 and memory's step 6, but both are committed once their checkpointers close
        assertThat(log).contains("memory 2", "memory 4");
        assertThat(dir.resolve("a").resolve("step-000004").resolve("metadata.json")).exists();
        assertThat(h.get(1).get("ram/step-000006/metadata", 0)).isNotEmpty();
        log.clear();
        float[] resumed = run(STEPS, true, h, dir.resolve("a"), log);
        assertThat(log.getFirst()).isEqualTo("resumed from memory at step 6");

        // 2. this node's holder and its buddy are lost: node 0 still lists step 6, but the shard is gone -> disk
        h = holders(3);
        log.clear();
        run(7, false, h, dir.resolve("b"), log);
        h.get(1).close();
        h.get(2).close();
        h.set(1, new InMemoryStore(5_000)); // the replaced launchers hold nothing
        h.set(2, new InMemoryStore(5_000));
        log.clear();
        resumed = run(STEPS, true, h, dir.resolve("b"), log);
        assertThat(log.getFirst()).isEqualTo("resumed from disk at step 4");
        assertThat(log.get(1)).startsWith("memory (step 6)").contains("rank-00000.safetensors", "in no live node's memory");
        assertThat(Arrays.equals(resumed, reference)).as("bitwise as the uninterrupted run").isTrue();
    }

    /**
     * Memory holds steps 4 and 6, disk step 5; memory's step 6 lost a chunk. Memory must not fall back to its step 4
     * (older than disk's 5, which it would then set aside): the resume takes disk's step 5.
     */
    @Test
    void aTierFallsBackNoFurtherThanTheNextTiersNewestStep() {
        float[] reference = run(STEPS, false, holders(3), dir.resolve("ref"), new ArrayList<>());
        List<InMemoryStore> h = holders(3);
        List<String> log = new ArrayList<>();
        run(7, false, h, dir.resolve("c"), 5, log, null);
        assertThat(dir.resolve("c").resolve("step-000005").resolve("metadata.json")).exists(); // committed (maybe unreported)
        assertThat(h.get(1).get("ram/step-000006/metadata", 0)).isNotEmpty();
        for (InMemoryStore s : h) s.delete("ram/step-000006/rank-00000.safetensors#0");
        log.clear();
        float[] resumed = run(STEPS, true, h, dir.resolve("c"), 5, log, null);
        assertThat(log.getFirst()).isEqualTo("resumed from disk at step 5");
        assertThat(log).anyMatch(l -> l.startsWith("memory (step 6)"));
        assertThat(dir.resolve("c").resolve("step-000005")).as("the step loaded stays").isDirectory();
        assertThat(Arrays.equals(resumed, reference)).as("bitwise as the uninterrupted run").isTrue();
    }

    /** The nodes' memory goes away mid-run: its saves fail, are reported, and training goes on to the end with disk. */
    @Test
    void aFailingMemoryTierIsReportedAndTrainingGoesOn() {
        float[] reference = run(STEPS, false, holders(3), dir.resolve("ref"), new ArrayList<>());
        List<InMemoryStore> h = holders(3);
        List<String> log = new ArrayList<>();
        float[] done = run(STEPS, false, h, dir.resolve("d"), 4, log, step -> {
            if (step == 4) h.forEach(InMemoryStore::close);
        });
        // memory's step 4 may still be writing when its holders close: it is then the first to fail
        assertThat(log).contains("memory 2", "disk 4", "disk 8");
        assertThat(log).anyMatch(l -> l.matches("memory [468] failed: .*"));
        assertThat(Arrays.equals(done, reference)).as("the run ends as if nothing happened").isTrue();
    }
}
