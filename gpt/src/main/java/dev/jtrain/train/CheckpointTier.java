package dev.jtrain.train;

import dev.jtrain.checkpoint.CheckpointException;
import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.SaveOptions;
import dev.jtrain.checkpoint.SaveReport;
import dev.jtrain.tensor.state.Stateful;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Where and how often the trainer checkpoints: a storage tier (disk, the nodes' memory) with its own checkpointer,
 * interval and retention, and the save it has in flight. Tiers are independent: each saves on its own steps, and a
 * step due in two tiers is saved in both.
 */
public final class CheckpointTier {
    private final String name;
    private final Checkpointer checkpointer;
    private final Path root;
    private final int every;
    private final boolean async;
    private final int keepLast;
    private final boolean bestEffort;
    /** The async save not yet reported, what it blocked, and what the optimizer steps after it waited for its snapshot. */
    private CompletableFuture<SaveReport> inFlight;
    private double blockedMs, waitMs;
    private int inFlightStep = -1;
    private int lastSaved = -1;

    /**
     * @param name     how reports name it ("disk", "memory")
     * @param every    save every N steps (0: only when the run is stopped by a signal)
     * @param keepLast committed checkpoints kept (0 = all)
     */
    public CheckpointTier(String name, Checkpointer checkpointer, Path root, int every, boolean async, int keepLast) {
        this(name, checkpointer, root, every, async, keepLast, false);
    }

    /**
     * @param bestEffort a failed save is reported ({@link TrainListener#onCheckpointFailed}) and training goes on: for
     *                   a tier beside a durable one (the nodes' memory beside disk), whose loss costs recomputed steps
     *                   at worst
     */
    public CheckpointTier(String name, Checkpointer checkpointer, Path root, int every, boolean async, int keepLast,
                          boolean bestEffort) {
        this.bestEffort = bestEffort;
        if (every < 0) throw new IllegalArgumentException("checkpoint interval must be >= 0: every=" + every);
        this.name = name;
        this.checkpointer = checkpointer;
        this.root = root;
        this.every = every;
        this.async = async;
        this.keepLast = keepLast;
    }

    public String name() { return name; }

    public Checkpointer checkpointer() { return checkpointer; }

    public Path root() { return root; }

    public int every() { return every; }

    boolean dueAfter(int stepsDone) { return every > 0 && stepsDone % every == 0; }

    int lastSaved() { return lastSaved; }

    void startedAt(int step) { lastSaved = step; }

    /** Starts saving the state after {@code stepsDone} steps; a stop-time save is synchronous whatever the tier says. */
    void save(int stepsDone, Map<String, Stateful> state, boolean forceSync, TrainListener listener,
              long runStart) {
        long b0 = System.nanoTime(); // blocked time includes waiting for the previous save, if still writing
        awaitPrevious(listener, runStart);
        boolean a = async && !forceSync;
        // async: the snapshot copy overlaps the next forward and backward (which only read the state); the next
        // optimizer step waits for it
        try {
            inFlight = checkpointer.save(root, state, new SaveOptions(stepsDone, a, keepLast, a));
        } catch (CheckpointException e) {
            if (!bestEffort) throw e;
            inFlight = null;
            listener.onCheckpointFailed(name, stepsDone, e.getMessage());
            return;
        }
        inFlightStep = stepsDone;
        lastSaved = stepsDone;
        blockedMs = (System.nanoTime() - b0) / 1e6;
        waitMs = 0;
        if (!a) report(listener, runStart);
    }

    /** The optimizer step waits for an overlapped snapshot still copying the state; returns the nanoseconds waited. */
    long awaitSnapshot() {
        long ns = checkpointer.awaitSnapshot();
        waitMs += ns / 1e6;
        return ns;
    }

    /** Reports the save in flight if it has finished. */
    void reportIfDone(TrainListener listener, long runStart) {
        if (inFlight != null && inFlight.isDone()) report(listener, runStart);
    }

    /** Waits for the save in flight (rethrowing its failure, or reporting it for a best-effort tier) and reports it. */
    void awaitPrevious(TrainListener listener, long runStart) {
        try {
            checkpointer.awaitPrevious();
        } catch (CheckpointException e) {
            if (!bestEffort) throw e;
            inFlight = null;
            listener.onCheckpointFailed(name, inFlightStep, e.getMessage());
            return;
        }
        if (inFlight != null) report(listener, runStart);
    }

    /** Reports the save in flight, which has completed (a failed one is not reported: the next save or close throws). */
    private void report(TrainListener listener, long runStart) {
        var f = inFlight;
        inFlight = null;
        if (f.isCompletedExceptionally()) return;
        var r = f.join();
        listener.onCheckpoint(new CheckpointMetrics((int) r.step(), async, blockedMs, waitMs, r.totalNanos() / 1e9,
                r.bytesWrittenPerRank()[checkpointer.rank()], r.writeCpuNanos() < 0 ? -1 : r.writeCpuNanos() / 1e6,
                (System.nanoTime() - runStart) / 1e9, name));
        if (r.note() != null) listener.onCheckpointNote(name, (int) r.step(), r.note());
    }
}
