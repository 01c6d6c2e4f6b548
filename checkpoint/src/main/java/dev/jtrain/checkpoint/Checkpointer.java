package dev.jtrain.checkpoint;

import dev.jtrain.comm.JTrainCommException;
import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.posix.PosixStorage;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * Saves and loads distributed checkpoints of named {@link Stateful} parts (model, optimizer, trainer...), for one
 * process ({@code group == null}) or any world size, resharding on load (flat ranges are matched, so a checkpoint
 * saved by 4 ranks under ZeRO-2 loads into 2 ranks under ZeRO-1 or into one process).
 *
 * <p><b>Save</b>, every rank, same order:
 * <pre>
 *   save(root, state, options)
 *     wait for the previous save; a failure it had is thrown here (naming rank and file)
 *     plan      SavePlanner.plan: cache hit → no collectives; miss → gather local plans, coordinator merges, broadcast
 *     snapshot  copy my pieces into an off-heap staging buffer (the only stall of an async save)      Snapshot
 *               (sync: the background writer already writes the chunks copied so far, right behind the copy)
 *     ── async: return a future here; the rest runs on the background writer ──
 *     (overlapSnapshot: return before the snapshot; a copier thread copies, awaitSnapshot() fences the caller)
 *     write     my shard file: temp, fsync, rename (CRC32C per piece, from the snapshot or computed here)  ShardFileWriter
 *     report    gather(RankReport → coordinator)
 *   coordinator: all durable and on the same plan → metadata.json (temp, fsync, rename) → 'latest' → retention
 *     outcome   broadcast(committed or why not); the future completes on every rank; staging returns to the pool
 * </pre>
 * <b>Load</b>, every rank: see {@link CheckpointLoader}.
 *
 * <p>Collectives run on a private sub-group of {@code group}, with its own thread and sequence numbers, so a
 * background commit never interleaves with the training loop's collectives. Creating a Checkpointer is therefore
 * collective (every rank constructs one at the same point).
 *
 * <p>Threading: call {@code save}, {@code load} and {@code close} from one thread (the training thread).
 */
public final class Checkpointer implements AutoCloseable {
    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

    /** This thread's CPU time (user and system), or -1 where the JVM cannot tell. */
    static long threadCpuNanos() {
        return CPU.isCurrentThreadCpuTimeSupported() ? CPU.getCurrentThreadCpuTime() : -1;
    }


    private final ProcessGroup group;
    private final int rank, world;
    private final SavePlanner planner = new SavePlanner();
    private final CheckpointerOptions settings;
    private final CheckpointStorage storage;
    private final long snapshotDelayMs;
    private final StagingPool staging;
    private final ExecutorService writer;
    /** Copies an overlapped snapshot into staging while the writer writes behind it and training goes on. */
    private final ExecutorService copier;
    private SpanSink spans = SpanSink.NONE;
    private CompletableFuture<SaveReport> pending = CompletableFuture.completedFuture(null);
    /** Completes when the last save's copy into staging is done (only an overlapped snapshot leaves it pending). */
    private volatile CompletableFuture<Void> snapshot = CompletableFuture.completedFuture(null);
    private long pendingStep = -1;

    /** @param group the data-parallel group, or null for one process */
    public Checkpointer(ProcessGroup group) { this(group, CheckpointerOptions.defaults()); }

    /** Files on a POSIX file system ({@link PosixStorage}). */
    public Checkpointer(ProcessGroup group, CheckpointerOptions settings) {
        this(group, settings, new PosixStorage(settings.nativeWriter()));
    }

    /** Checkpoints written to and read from {@code storage}. */
    public Checkpointer(ProcessGroup group, CheckpointerOptions settings, CheckpointStorage storage) {
        this(group, settings, storage, 0);
    }

    /**
     * @param snapshotDelayMs the overlapped snapshot waits this long before copying: lets a test show that training
     *                        which does not call {@link #awaitSnapshot()} before changing the state would leak into
     *                        the checkpoint (0 in production)
     */
    Checkpointer(ProcessGroup group, CheckpointerOptions settings, CheckpointStorage storage, long snapshotDelayMs) {
        this.snapshotDelayMs = snapshotDelayMs;
        this.settings = settings;
        this.storage = storage;
        this.staging = new StagingPool(settings.hugePages());
        if (group != null) {
            int[] all = new int[group.size()];
            Arrays.setAll(all, i -> i);
            this.group = group.newGroup(all).orElseThrow();
        } else {
            this.group = null;
        }
        this.rank = group == null ? 0 : group.rank();
        this.world = group == null ? 1 : group.size();
        this.writer = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("checkpoint-writer-rank" + rank).factory());
        this.copier = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("checkpoint-copier-rank" + rank).factory());
        if (this.group != null) {
            // The exchanges save planning makes, once, now (construction is collective anyway): the sub-group's
            // channels are set up on first use, which would stall the first checkpoint of a trainer.
            byte[] hello = {1};
            ByteExchange.gather(this.group, hello, 0);
            ByteExchange.broadcast(this.group, hello, 0);
        }
        // On the idle writer thread, the first use of what a save needs (without it the first checkpoint blocks
        // training many times longer than later ones; bench/MEASUREMENTS.md, "first save"): the plan codec and the
        // merge, and the native calls (mmap/madvise for staging, the O_DIRECT writer), whose method handles link on
        // first use. A failure here only loses the warm-up.
        boolean planning = this.group != null;
        writer.execute(() -> {
            try {
                if (planning) SavePlanner.warmUp();
                try (Arena a = Arena.ofConfined()) {
                    StagingMemory.allocate(a, StagingMemory.HUGE, 4096, settings.hugePages()); // mapped, never touched
                }
                storage.warmUp();
            } catch (RuntimeException e) {
                // the first save pays for it instead
            }
        });
    }

    public void setSpanSink(SpanSink sink) {
        this.spans = sink == null ? SpanSink.NONE : sink;
    }

    public SavePlanner planner() { return planner; }

    public StagingPool staging() { return staging; }

    public int rank() { return rank; }

    public int worldSize() { return world; }

    /** The newest committed step under {@code root} in this checkpointer's storage, as this rank sees it. */
    public OptionalLong newestStep(Path root) {
        try {
            List<Path> steps = storage.committedSteps(root);
            return steps.isEmpty() ? OptionalLong.empty() : storage.stepOf(steps.getLast());
        } catch (IOException e) {
            throw new CheckpointException("rank " + rank + ": cannot list the checkpoints under " + root + ": " + e, e);
        }
    }

    private boolean committed(Path dir) {
        try {
            return storage.isCommitted(dir);
        } catch (IOException e) {
            throw new CheckpointException("rank " + rank + ": cannot tell whether " + dir + " is committed: " + e, e);
        }
    }

    /**
     * Saves {@code state} as {@code root/step-NNNNNN}. Synchronous: returns a completed future once committed (or
     * throws). Async: returns once the snapshot is in staging (with {@link SaveOptions#overlapSnapshot()}: at once,
     * and {@link #awaitSnapshot()} must come before the state changes); the future completes when the checkpoint is
     * committed on every rank, or exceptionally with a {@link CheckpointException} naming the rank and file that failed.
     *
     * @throws CheckpointException if the previous async save failed (surfaced here once), or this one fails
     *                             synchronously
     */
    public CompletableFuture<SaveReport> save(Path root, Map<String, Stateful> state, SaveOptions options) {
        long t0 = System.nanoTime();
        awaitPrevious();
        Path dir = storage.stepDir(root, options.step());
        if (committed(dir))
            throw new CheckpointException("rank " + rank + ": checkpoint " + dir + " is already committed; "
                    + "delete it or save under another step (a committed checkpoint is never overwritten)");
        LocalPlan local = LocalPlan.of(rank, world, state);
        SavePlanner.Result planned = planner.plan(local, group);
        long t1 = System.nanoTime();
        spans.span("ckpt plan" + (planned.cacheHit() ? " (cached)" : ""), t0, t1);
        GlobalPlan plan = planned.plan();
        List<WriteItem> mine = plan.writes().get(rank);
        StagingPool.Buffer buf = staging.acquire(plan.bytesWritten(rank));
        Map<String, Map<String, String>> meta = new LinkedHashMap<>();
        List<TensorShard> live;
        try {
            live = LocalPlan.liveShards(state);
            // non-tensor state (data position, RNG) is small and may change in the next forward: always taken here
            for (var e : state.entrySet()) meta.put(e.getKey(), new LinkedHashMap<>(e.getValue().metadata()));
        } catch (RuntimeException e) {
            staging.release(buf);
            throw e;
        }
        // The writer starts first and follows the copy chunk by chunk, so the copy hides behind the disk writes. The
        // copier checksums as it copies, unless it is the training thread of an async save (save would block for it).
        // An async save that copies on the training thread starts its writer after the copy: the writer's CRC32C and
        // I/O would compete with the copy for the cores and lengthen the stall, the one thing async is for.
        boolean overlapped = options.overlapSnapshot(), writerFirst = overlapped || !options.async();
        Snapshot snap = new Snapshot(mine, live, buf.segment(), writerFirst);
        Job job = new Job(root, dir, options, plan, planned, buf, meta, snap, t0, t1);
        job.returned = System.nanoTime(); // before submitting: the writer thread sees it (used for an overlapped save)
        if (writerFirst) submit(job, buf, dir);
        if (overlapped) {
            long delay = snapshotDelayMs;
            try {
                copier.execute(() -> {
                    try {
                        if (delay > 0) Thread.sleep(delay);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    copy(snap, "ckpt snapshot (overlapped)");
                });
            } catch (RuntimeException | Error e) { // closed, or no thread to be had
                snap.abort(e); // the writer fails the save through the commit protocol
            }
            snapshot = snap.copied();
            return pending;
        }
        copy(snap, "ckpt snapshot");
        if (!writerFirst) {
            submit(job, buf, dir);
            return pending;
        }
        // A sync save ends committed or failed, as if it ran on this thread: an interrupt is kept for afterwards (the
        // writer's commit collectives must not be left running under the next save's or load's).
        CompletableFuture<SaveReport> done = pending;
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    SaveReport r = done.get();
                    pending = CompletableFuture.completedFuture(null); // returned or thrown here, once
                    return CompletableFuture.completedFuture(r);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    pending = CompletableFuture.completedFuture(null);
                    Throwable c = e.getCause();
                    if (c instanceof CheckpointException ce) throw ce;
                    if (c instanceof Error err) throw err;
                    throw new CheckpointException("rank " + rank + ": saving " + dir + " failed: " + c, c);
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /** Runs the copy on this thread; a failure reaches every rank through the writer's commit protocol. */
    private void copy(Snapshot snap, String span) {
        long c0 = System.nanoTime();
        try {
            snap.run();
        } catch (RuntimeException | Error e) {
            snap.abort(e); // no-op if run() ended it; the writer reports it and the save fails on every rank
        }
        spans.span(span, c0, System.nanoTime());
    }

    private void submit(Job job, StagingPool.Buffer buf, Path dir) {
        try {
            pending = CompletableFuture.supplyAsync(job::run, writer);
        } catch (RejectedExecutionException e) {
            staging.release(buf);
            throw new CheckpointException("rank " + rank + ": cannot save " + dir + ": this Checkpointer is closed", e);
        }
        pendingStep = job.options.step();
    }

    /**
     * Blocks until the snapshot of the last save is in staging, and returns how long it waited (ns). After a save
     * with {@link SaveOptions#overlapSnapshot()} a background thread is still copying the live tensors: call this before
     * changing any of them (before the optimizer step). Returns at once otherwise. A failed copy does not throw here;
     * like any save failure it fails the save's future and is rethrown by the next save, load or close.
     */
    public long awaitSnapshot() {
        CompletableFuture<Void> s = snapshot;
        if (s.isDone()) return 0;
        long w0 = System.nanoTime();
        try {
            s.get();
        } catch (ExecutionException e) {
            // reported through the save's future
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckpointException("rank " + rank + ": interrupted while waiting for the snapshot of step " + pendingStep, e);
        }
        return System.nanoTime() - w0;
    }

    /** Waits for the save in flight, if any; rethrows its failure (once). */
    public void awaitPrevious() {
        CompletableFuture<SaveReport> p = pending;
        try {
            p.get();
            pending = CompletableFuture.completedFuture(null);
        } catch (ExecutionException e) {
            pending = CompletableFuture.completedFuture(null); // surfaced once
            Throwable c = e.getCause();
            throw new CheckpointException("rank " + rank + ": the previous asynchronous save (step " + pendingStep
                    + ") failed: " + c.getMessage(), c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckpointException("rank " + rank + ": interrupted while waiting for the save of step " + pendingStep, e);
        }
    }

    /**
     * Loads the checkpoint {@code options} selects under {@code root} (or {@code root} itself if it is a step
     * directory) into {@code state}'s live buffers, then calls each part's {@link Stateful#restore}. Pieces are
     * verified as they are read and swapped into the live buffers undoably: if any rank fails to read or verify
     * anything (or loses a peer) before every rank has agreed, the live buffers are put back exactly as they were. Do
     * not read the live buffers from another thread during a load. Collective.
     *
     * <p>With {@link LoadOptions#fallback}, committed checkpoints are tried newest first until one loads and verifies;
     * the ones passed over are named in {@link LoadReport#skipped} with what failed, and left on disk.
     */
    public LoadReport load(Path root, Map<String, Stateful> state, LoadOptions options) {
        awaitPrevious();
        CheckpointLoader loader = new CheckpointLoader(group, rank, world, staging, spans, storage, settings);
        if (!options.fallback() || options.step() >= 0 || committed(root)) return loader.load(root, state, options);
        List<Path> skipped = new ArrayList<>();
        List<String> why = new ArrayList<>();
        for (Path dir : candidates(root)) {
            if (storage.stepOf(dir).orElse(Long.MAX_VALUE) < options.minStep()) break; // another tier has a newer one
            LoadReport r;
            try {
                r = loader.loadStep(dir, state, options);
            } catch (CheckpointCorruptException e) {
                skipped.add(dir); // every rank alike
                why.add(dir.getFileName() + ": " + e.getMessage());
                continue;
            }
            return r.withSkipped(setAside(root, skipped, dir, why));
        }
        if (skipped.isEmpty())
            throw new CheckpointException("rank " + rank + ": no committed checkpoint under " + root);
        throw new CheckpointException("rank " + rank + ": no committed checkpoint under " + root + " loads and verifies; tried, newest"
                + " first: " + String.join("; ", why));
    }

    /**
     * The coordinator moves the newer checkpoints that failed out of the way (kept for inspection, not deleted), so the
     * run can save their steps again and 'latest' names what was loaded. The other ranks write nothing before the next
     * save, which starts after collectives the coordinator joins only once this is done.
     */
    private List<String> setAside(Path root, List<Path> skipped, Path loaded, List<String> why) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < skipped.size(); i++) {
            String where = "set aside by rank 0";
            if (rank == 0) {
                try {
                    where = "set aside as " + storage.setAside(root, skipped.get(i), loaded).getFileName();
                } catch (IOException e) {
                    throw new CheckpointException("rank 0: loaded " + loaded + " but cannot set aside the unusable " + skipped.get(i)
                            + " (move it away by hand before the run saves that step again): " + e, e);
                }
            }
            out.add(why.get(i) + " [" + where + "]");
        }
        return out;
    }

    /**
     * Sets aside every committed step under {@code root} newer than {@code step}, as a failed fallback would: a resume
     * that loaded {@code step} from another tier (memory lost the shards; these did not verify) continues from there,
     * and must be able to save those steps again. Rank 0 acts; the others return at once (they save only after
     * collectives rank 0 joins once this is done). Returns what was set aside, where.
     */
    public List<String> setAsideNewerThan(Path root, long step) {
        List<String> out = new ArrayList<>();
        if (rank != 0) return out;
        try {
            List<Path> committed = storage.committedSteps(root);
            Path replacement = null;
            for (Path p : committed) if (storage.stepOf(p).orElse(-1) <= step) replacement = p;
            for (Path p : committed.reversed()) {
                if (storage.stepOf(p).orElse(-1) <= step) break;
                out.add(p + " -> " + storage.setAside(root, p, replacement).getFileName());
            }
        } catch (IOException e) {
            throw new CheckpointException("rank 0: cannot set aside the checkpoints newer than step " + step + " under " + root
                    + " (move them away by hand before the run saves those steps again): " + e, e);
        }
        return out;
    }

    /**
     * Committed steps under {@code root}, newest first, as rank 0 lists them: on disks local to each host the ranks
     * could list different steps, and they must try the same ones in the same order.
     */
    private List<Path> candidates(Path root) {
        List<Path> mine;
        try {
            mine = storage.committedSteps(root).reversed();
        } catch (IOException e) {
            throw new CheckpointException("rank " + rank + ": cannot list the checkpoints under " + root + ": " + e, e);
        }
        if (group == null || world == 1) return mine;
        String names = String.join("\n", mine.stream().map(p -> p.getFileName().toString()).toList());
        String agreed = new String(ByteExchange.broadcast(group, names.getBytes(StandardCharsets.UTF_8), 0), StandardCharsets.UTF_8);
        return agreed.isEmpty() ? List.of() : Arrays.stream(agreed.split("\n")).map(root::resolve).toList();
    }

    /** Waits for the save in flight (rethrowing its failure), then frees staging and the writer thread. */
    @Override
    public void close() {
        try {
            awaitPrevious();
        } finally {
            writer.shutdown();
            copier.shutdown();
            staging.close();
            if (group != null) group.close();
        }
    }

    /**
     * The writer's part of one save, on the writer thread for every kind of save: write (following the snapshot
     * chunk by chunk), report, commit. A synchronous save waits for it.
     */
    private final class Job {
        final Path root, dir;
        final SaveOptions options;
        final GlobalPlan plan;
        final SavePlanner.Result planned;
        final StagingPool.Buffer buf;
        final Map<String, Map<String, String>> meta;
        final Snapshot snap;
        final long t0, t1;
        /** When save returned, for an overlapped snapshot (which returns before the copy). */
        long returned;

        Job(Path root, Path dir, SaveOptions options, GlobalPlan plan, SavePlanner.Result planned, StagingPool.Buffer buf,
            Map<String, Map<String, String>> meta, Snapshot snap, long t0, long t1) {
            this.root = root; this.dir = dir; this.options = options; this.plan = plan; this.planned = planned;
            this.buf = buf; this.meta = meta; this.snap = snap; this.t0 = t0; this.t1 = t1;
        }

        SaveReport run() {
            String file = GlobalPlan.fileName(rank);
            RankReport report;
            long cpu0 = threadCpuNanos();
            long w0 = System.nanoTime();
            try {
                ShardFileWriter.Written w = ShardFileWriter.write(storage, dir, file, plan.writes().get(rank),
                        plan.layout().get(rank).shards(), snap,
                        Map.of("format", "jtrain-checkpoint", "rank", Integer.toString(rank), "step", Long.toString(options.step())),
                        settings.directIo());
                snap.awaitEnd(); // the copier's CRCs of trailing empty pieces come after its last chunk
                List<String> crcs = new ArrayList<>();
                for (long c : w.crc32c()) crcs.add(Crc32c.hex(c));
                report = new RankReport(rank, plan.hashCode(), file, w.fileBytes(), w.dataStart(), crcs, meta, null);
            } catch (IOException | RuntimeException e) {
                report = new RankReport(rank, plan.hashCode(), file, 0, 0, List.of(), meta, snap.failure() != null
                        ? "rank " + rank + " could not copy its state into staging for " + dir.resolve(file) + ": " + snap.failure()
                        : "rank " + rank + " could not write " + dir.resolve(file) + ": " + e);
            } finally {
                snap.awaitEnd(); // the copier may still be writing into the buffer
                // the write is over (done or failed): the buffer may be reused, unless an Error stopped the copy anywhere
                if (snap.failure() instanceof Error) staging.discard(buf);
                else staging.release(buf);
            }
            long w1 = System.nanoTime();
            long cpu = cpu0 < 0 ? -1 : threadCpuNanos() - cpu0;
            if (cpu >= 0 && options.overlapSnapshot()) cpu = snap.cpuNanos() < 0 ? -1 : cpu + snap.cpuNanos();
            spans.span("ckpt write+fsync", w0, w1);
            long stall = options.overlapSnapshot() ? returned - t0 : options.async() ? snap.endNanos() - t0 : -1;
            List<RankReport> all;
            String outcome = null, mixed = null, note = null;
            boolean reported = false, committedHere = false;
            try {
                if (group == null) {
                    all = List.of(report);
                } else {
                    List<byte[]> bytes = ByteExchange.gather(group, SaveMessage.wrap(SaveMessage.REPORT, Json.bytes(report)), 0);
                    all = null;
                    if (bytes != null) {
                        mixed = SaveMessage.mixedPhases(bytes);
                        if (mixed == null) {
                            all = new ArrayList<>();
                            for (byte[] b : bytes) all.add(Json.read(SaveMessage.body(b), RankReport.class));
                        }
                    }
                }
                reported = true;
                if (rank == 0) {
                    outcome = mixed != null ? mixed : commit(all);
                    committedHere = outcome == null;
                    // Retention comes after the commit, outside its verdict: the checkpoint is committed whatever
                    // happens to the older ones, and a failure to delete them is reported, not a failed save.
                    if (committedHere) note = retain(dir);
                }
                if (group != null) {
                    byte[] verdict = ByteExchange.broadcast(group, mixed != null ? SaveMessage.wrap(SaveMessage.LAYOUT_MISMATCH, mixed)
                            : note != null ? SaveMessage.wrap(SaveMessage.COMMITTED_WITH_NOTE, note)
                            : SaveMessage.wrap(SaveMessage.OUTCOME, outcome == null ? "" : outcome), 0);
                    outcome = SaveMessage.text(verdict);
                    if (SaveMessage.kind(verdict) == SaveMessage.COMMITTED_WITH_NOTE) {
                        note = outcome;
                        outcome = "";
                    } else if (SaveMessage.kind(verdict) == SaveMessage.LAYOUT_MISMATCH) planner.invalidate();
                    else if (SaveMessage.kind(verdict) != SaveMessage.OUTCOME)
                        outcome = "rank " + rank + " got an unexpected answer from the coordinator (kind '" + (char) SaveMessage.kind(verdict)
                                + "'); the ranks are out of step";
                }
            } catch (JTrainCommException e) {
                String mine = report.error() != null ? report.error() : "my file " + file + " was durable";
                // Only rank 0 commits, after it has every rank's report, and then tells the others (two-phase commit
                // with rank 0 as coordinator). A rank lost before the reports were in means nothing was committed; one
                // lost while the verdict was on its way may leave the step committed, and 'latest' naming it.
                if (committedHere) throw new CheckpointException("rank 0: checkpoint " + dir + " was committed, but the"
                        + " other ranks were lost before they heard so (" + mine + "): " + e.getMessage()
                        + ". A resume loads it.", e);
                if (reported && rank != 0) throw new CheckpointException("rank " + rank + ": checkpoint " + dir + " may or"
                        + " may not be committed: lost the coordinator's verdict after this rank's report was sent (" + mine
                        + "): " + e.getMessage() + ". A resume loads it only if rank 0 committed it and it verifies.", e);
                throw new CheckpointException("rank " + rank + ": checkpoint " + dir + " not committed: lost the other ranks"
                        + " while committing (" + mine + "): " + e.getMessage(), e);
            }
            long c1 = System.nanoTime();
            spans.span("ckpt commit", w1, c1);
            if (outcome != null && !outcome.isEmpty())
                throw new CheckpointException("checkpoint " + dir + " not committed: " + outcome);
            return new SaveReport(options.step(), dir, planned.cacheHit(), planned.planningNanos(), snap.nanos(),
                    stall >= 0 ? stall : c1 - t0, w1 - w0, cpu, c1 - t0, plan.bytesWrittenPerRank(), note);
        }

        /** Coordinator, after the commit: applies keep-last; returns what failed, else null. */
        private String retain(Path dir) {
            try {
                storage.retain(root, options.keepLast(), dir);
                return null;
            } catch (IOException | RuntimeException e) {
                return "committed, but removing checkpoints older than the newest " + options.keepLast() + " under " + root
                        + " failed: " + e + "; they stay until a later save removes them";
            }
        }

        /** Coordinator: returns null when committed, else what went wrong (every rank will throw it). */
        private String commit(List<RankReport> reports) {
            StringBuilder errors = new StringBuilder();
            for (RankReport r : reports) {
                if (r.error() != null) errors.append(errors.isEmpty() ? "" : "; ").append(r.error());
                else if (r.planHash() != plan.hashCode())
                    errors.append(errors.isEmpty() ? "" : "; ").append("rank ").append(r.rank())
                            .append(" saved with a different plan (its state layout changed without the others')");
            }
            if (!errors.isEmpty()) return errors.toString();
            try {
                Map<String, CheckpointMetadata.Item> items = new LinkedHashMap<>();
                Map<String, CheckpointMetadata.FileEntry> files = new LinkedHashMap<>();
                for (RankReport r : reports) {
                    files.put(r.file(), new CheckpointMetadata.FileEntry(r.rank(), r.fileBytes()));
                    List<WriteItem> ws = plan.writes().get(r.rank());
                    for (int i = 0; i < ws.size(); i++) {
                        WriteItem w = ws.get(i);
                        PlannedShard s = plan.layout().get(r.rank()).shards().get(w.localIndex());
                        items.computeIfAbsent(w.item(), k -> new CheckpointMetadata.Item(s.dtype(), s.shape(), new ArrayList<>()))
                                .pieces().add(new CheckpointMetadata.Piece(w.offset(), w.length(), r.file(), w.tensor(),
                                        r.dataStart() + w.begin(), w.bytes(), r.crc32c().get(i), r.rank()));
                    }
                }
                for (CheckpointMetadata.Item it : items.values())
                    it.pieces().sort(Comparator.comparingLong(CheckpointMetadata.Piece::offset));
                Map<String, List<Map<String, String>>> state = new LinkedHashMap<>();
                for (RankReport r : reports)
                    r.state().forEach((k, v) -> state.computeIfAbsent(k, x -> new ArrayList<>()).add(v));
                CheckpointMetadata m = new CheckpointMetadata(CheckpointMetadata.FORMAT, CheckpointMetadata.VERSION,
                        options.step(), world, Instant.now().toString(), items, state, files, plan.layout());
                storage.syncStep(dir); // every rank's published shard file is durable before the commit
                storage.commit(root, dir, Json.bytes(m));
                return null;
            } catch (IOException | RuntimeException e) {
                return "coordinator (rank 0) could not commit " + dir + ": " + e;
            }
        }
    }
}
