package dev.jtrain.cli;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.checkpoint.CheckpointException;
import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.CheckpointerOptions;
import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage;
import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage.Placement;
import dev.jtrain.comm.algo.PairwiseOrder;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroups;
import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.engine.ClusterEngine;
import dev.jtrain.comm.engine.ClusterEngines;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.engine.JtrainEnvEngine;
import dev.jtrain.comm.engine.NodeLayout;
import dev.jtrain.comm.engine.RankLayout;
import dev.jtrain.comm.CommException;
import dev.jtrain.comm.launch.CpuBinding;
import dev.jtrain.comm.launch.AbortSignal;
import dev.jtrain.comm.launch.WarmRestart;
import dev.jtrain.comm.launch.RendezvousEnv;
import dev.jtrain.comm.DType;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.parallel.DataParallel;
import dev.jtrain.parallel.DataParallelOptions;
import dev.jtrain.parallel.GradReduce;
import dev.jtrain.parallel.GradWire;
import dev.jtrain.parallel.MemoryPlan;
import dev.jtrain.parallel.MemoryReport;
import dev.jtrain.parallel.ShardScope;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.GptWeights;
import dev.jtrain.gpt.data.BatchSampler;
import dev.jtrain.gpt.data.Corpus;
import dev.jtrain.gpt.data.CorpusOptions;
import dev.jtrain.gpt.data.CorpusProgress;
import dev.jtrain.gpt.data.Tokenizer;
import dev.jtrain.gpt.data.Tokenizers;
import dev.jtrain.gpt.data.Tokens;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.kernel.KernelOptions;
import dev.jtrain.tensor.kernel.Bf16Gemm;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;
import dev.jtrain.train.CheckpointTier;
import dev.jtrain.train.TraceWriter;
import dev.jtrain.train.TrainConfig;
import dev.jtrain.train.TrainListener;
import dev.jtrain.train.Trainer;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/**
 * {@code jtrain train}: the main job. With no flags it trains the built-in default preset on the running JDK's own
 * {@code lib/src.zip} (Java sources) with the byte tokenizer, then prints a sample of generated Java.
 */
@Command(name = "train", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Train a GPT. Without flags: a small byte-level model on the JDK's own Java sources (lib/src.zip) "
                + "for about 3 minutes, then print a generated sample.")
final class TrainCommand implements Callable<Integer> {
    @Option(names = "--preset", description = "Built-in preset (default, small, tiny) or a JSON file; flags override it.")
    String preset;
    @Option(names = "--data", description = "Text file, directory or zip of text to train on (default: $JAVA_HOME/lib/src.zip).")
    Path data;
    @Option(names = "--data-glob", description = "File-name filter inside directories/zips (default: *.java for src.zip, else *).")
    String dataGlob;
    @Option(names = "--tokenizer", description = "byte (256 symbols, any text) or gpt2 (GPT-2 BPE, 50257 tokens; needed for GPT-2 weights). Default: the preset's.") String tokenizer;
    @Option(names = "--n-layer", description = "Transformer blocks (default: the preset's).") Integer nLayer;
    @Option(names = "--n-head", description = "Attention heads per block; must divide --n-embd.") Integer nHead;
    @Option(names = "--n-embd", description = "Model width (embedding size).") Integer nEmbd;
    @Option(names = "--block-size", description = "Context length T in tokens (sequence length of each training window).") Integer blockSize;
    @Option(names = "--dropout", description = "Dropout probability in attention and MLP (0 disables).") Float dropout;
    @Option(names = "--batch-size", description = "Sequences per micro-batch, global: split across the data-parallel ranks.") Integer batchSize;
    @Option(names = "--grad-accum", description = "Micro-batches accumulated per optimizer step (global batch = batch size x this).") Integer gradAccum;
    @Option(names = "--max-steps", description = "Optimizer steps to run (upper bound; --max-seconds may stop earlier).") Integer maxSteps;
    @Option(names = "--max-seconds", description = "Wall-clock budget; 0 = none.") Double maxSeconds;
    @Option(names = "--lr", description = "Peak learning rate of AdamW, reached after the warmup.") Float lr;
    @Option(names = "--min-lr", description = "Learning rate at the end of the cosine decay.") Float minLr;
    @Option(names = "--warmup-steps", description = "Steps of linear learning-rate warmup.") Integer warmup;
    @Option(names = "--decay-steps", description = "Steps of the cosine decay, counted from step 0 (0 = --max-steps).") Integer decaySteps;
    @Option(names = "--weight-decay", description = "AdamW decoupled weight decay, applied to matrices only (not biases or layer norms).") Float weightDecay;
    @Option(names = "--grad-clip", description = "Clip the global gradient norm to this (0 = off).") Float gradClip;
    @Option(names = "--eval-interval", description = "Steps between validation-loss evaluations (0 = only at the end).") Integer evalInterval;
    @Option(names = "--eval-batches", description = "Batches averaged per validation-loss estimate.") Integer evalBatches;
    @Option(names = "--seed", description = "Seed for initial weights, data order and dropout (a run is reproducible from it).") Long seed;
    @Option(names = "--activation-checkpointing", description = "Recompute block activations in backward.") Boolean ckpt;
    @Option(names = "--precision", description = "Matmul precision: fp32, or bf16 (bf16 operands and fp32 accumulation on the "
            + "CPU's bf16 instructions, as torch.autocast; weights, gradients, optimizer state and checkpoints stay fp32). "
            + "Default: the preset's (fp32).") String precision;
    @Option(names = "--data-max-bytes", description = "Use at most this many bytes of source text.") Long dataMaxBytes;
    @Option(names = "--sample-tokens", description = "Tokens to generate after training.") Integer sampleTokens;
    @Option(names = "--threads", description = "Kernel threads (default: all cores).") Integer threads;
    @Option(names = "--peak-gflops", description = "Peak GFLOP/s for MFU (default: measured SGEMM at startup).") Double peakGflops;
    @Option(names = "--init-from", description = "Start from GPT-2 weights (Hugging Face safetensors; config.json beside it).") Path initFrom;
    @Option(names = "--out", description = "Run directory for metrics.jsonl, loss.png, sample.txt, model.safetensors (default: runs/<time>).")
    Path out;
    @Option(names = "--no-progress", description = "Plain log lines instead of a progress bar.") boolean noProgress;
    @Option(names = "--nproc", description = "Data-parallel processes on this machine (default: the preset's; 2 for the default preset).")
    Integer nproc;
    @Option(names = "--zero", defaultValue = "0", description = "0 = DDP, 1 = ZeRO-1 (sharded optimizer state), 2 = ZeRO-2 (also sharded gradients), 3 = ZeRO-3/FSDP (also sharded parameters, gathered block by block).")
    int zero;
    @Option(names = "--shard-within", defaultValue = "world", description = "With --zero 1-3: shard across every rank (world), or within each host and keep one replica per host (host: hybrid sharding, HSDP; gathers stay on the host's links and only reduced gradient shards cross hosts, once per optimizer step). Default: ${DEFAULT-VALUE}.")
    String shardWithin;
    @Option(names = "--bucket-mb", defaultValue = "auto", description = "Gradient bucket size in MiB, or auto: what the slowest link moves in about 10 ms, 1 to 25 MiB (25 on one host, ~2.3 at 2 Gbit/s). The first bucket is 1 MiB. Default: ${DEFAULT-VALUE}.")
    String bucketMb;
    @Option(names = "--grad-wire", defaultValue = "fp32", description = "Element type of gradient traffic: fp32, or bf16 for half the bytes on slow networks (~3 significant digits; weights and optimizer stay fp32). Default: ${DEFAULT-VALUE}.")
    String gradWire;

    @Option(names = "--grad-reduce", defaultValue = "fast", description = "Order gradients are summed in across ranks: fast (the"
            + " cost model's all-reduce), or ordered (one fixed tree, DDP only): a job that continues on fewer ranks (jtrain launch"
            + " --min-nodes) then trains bitwise as the job that lost nothing. Default: ${DEFAULT-VALUE}.")
    String gradReduce;
    @Option(names = "--no-overlap", description = "Launch gradient collectives only after backward (for comparison).")
    boolean noOverlap;
    @Option(names = "--trace", description = "Write a Perfetto/Chrome trace per rank into the run directory (trace-rank<N>.json).")
    boolean traceOn;
    @Option(names = "--ckpt-dir", description = "Directory of distributed checkpoints (step-NNNNNN/ per checkpoint, 'latest' pointer).")
    Path ckptDir;
    @Option(names = "--ckpt-every", defaultValue = "0", description = "Save a checkpoint every N steps (0 = never; needs --ckpt-dir).")
    int ckptEvery;
    @Option(names = "--async-ckpt", description = "Write checkpoints in the background: the copy into staging overlaps the next forward and backward, and only the optimizer step waits for it if it is not done.")
    boolean asyncCkpt;
    @Option(names = "--mem-ckpt-every", defaultValue = "0", description = "Also checkpoint every K steps into the memory of this node's"
            + " launcher and of the next node's (asynchronous; under `jtrain launch`, whose launchers outlive the ranks they restart)."
            + " A restart loads from there when it is newer than the disk checkpoint. 0 = off.")
    int memCkptEvery;
    @Option(names = "--resume", description = "Continue from the newest committed checkpoint that loads and verifies, in the nodes' memory"
            + " (--mem-ckpt-every) or in --ckpt-dir (fresh start if there is none); newer ones that fail are named, set aside as"
            + " step-N.unusable and kept.")
    boolean resume;
    @Option(names = "--keep-last", defaultValue = "0", description = "Keep only the newest K committed checkpoints (0 = all).")
    int keepLast;
    @Spec CommandSpec spec;

    /** What this run is: the process as started, or one attempt of a rank restarted in its JVM ({@link WarmRestart}). */
    private final WarmRestart.Attempt attempt;

    TrainCommand() { this(null); }

    /** {@code attempt}: null for this process as started. */
    TrainCommand(WarmRestart.Attempt attempt) { this.attempt = attempt; }

    /**
     * A step of one task (srun -n1, an salloc shell's step, mpirun -np 1) with an explicit --nproc above 1: the task
     * is this node's whole job, so the processes are launched here as without an engine, not trained as one.
     */
    static boolean loneTaskAskingForMore(Optional<RankLayout> ranks, Integer nproc) {
        return ranks.isPresent() && ranks.get().worldSize() == 1 && !ranks.get().engine().equals(JtrainEnvEngine.NAME)
                && nproc != null && nproc > 1;
    }

    @Override
    public Integer call() throws Exception {
        WarmRestart.Attempt run = attempt != null ? attempt : WarmRestart.Attempt.cold(EngineEnv.current());
        EngineEnv env = run.env();
        Optional<ClusterEngine> engine = ClusterEngines.detect(env);
        Optional<RankLayout> ranks = engine.flatMap(e -> e.ranks(env));
        if (loneTaskAskingForMore(ranks, nproc)) {
            System.out.printf("%s started one task; --nproc %d: its processes run on this node under jtrain's launcher%n",
                    ranks.get().engine(), nproc);
            ranks = Optional.empty();
            engine = Optional.empty();
        }
        boolean worker = ranks.map(r -> r.worldSize() > 1).orElse(false);
        if (worker && nproc != null && nproc > 1 && !ranks.get().engine().equals(JtrainEnvEngine.NAME)) {
            throw new IllegalArgumentException("--nproc " + nproc + ": under " + ranks.get().engine() + " every process it"
                    + " starts is a rank (" + ranks.get().worldSize() + " here); set the number of ranks there"
                    + " (srun --ntasks-per-node, mpirun -np) and drop --nproc");
        }
        Optional<NodeLayout> node = ranks.isPresent() ? Optional.empty() : engine.flatMap(e -> e.node(env));
        int processes = nproc != null ? nproc : node.map(NodeLayout::nprocPerNode).filter(n -> n > 0)
                .orElse(TrainSettings.load(preset).nproc);
        if (processes < 1) throw new IllegalArgumentException("--nproc must be >= 1, got " + processes);
        if (!worker && ranks.isEmpty() && (processes > 1 || node.isPresent())) {
            List<String> args = new ArrayList<>(spec.commandLine().getParseResult().originalArgs());
            if (nproc == null) args.addAll(List.of("--nproc", Integer.toString(processes)));
            return MultiProcess.launch(processes, threads, args, out, node.orElse(null));
        }
        if (threads != null) Parallel.setThreads(threads);
        TrainSettings s = TrainSettings.load(preset);
        applyOverrides(s);
        if (worker && WarmRestart.warmUpOnly(env)) return warmUp(s, ranks.get());
        ProcessGroup pg = worker ? ProcessGroups.init(env) : null;
        if (pg != null) run.abort().onAbort(why -> pg.abort(new CommException("rank " + pg.rank() + ": its launcher stopped this"
                + " attempt (" + why + ")"), 0));
        stopSignal = run.abort();
        groupReadyAtMs = System.currentTimeMillis();
        startedAtMs = run.startedAtMs();
        warmStart = run.warm();
        if (pg != null && threads == null && ranks.get().localWorldSize() > 1 && KernelOptions.CURRENT.threads() == 0) {
            // ranks started by an engine share the node's cores as the launcher would share them
            Parallel.setThreads(CpuBinding.threadsPerLocalRank(ranks.get().localWorldSize()));
        }
        try {
            return train(s, pg, env.vars());
        } catch (Throwable t) {
            releaseAfterFailure(pg, t);
            throw t;
        } finally {
            if (pg != null) pg.close();
        }
    }

    /**
     * A warm-up attempt ({@link WarmRestart#WARM_UP_ENV}): this node is about to rejoin a job that runs without it,
     * or is a spare that may take a lost node's place. The rank runs a few steps of the job's model on its own share
     * of the rows, alone (no process group, nothing saved), so that its JVM has loaded and compiled what a step uses
     * before it is needed; then it parks and is restarted warm into the regrouped job. A cold JVM spends most of its first step compiling
     * (bench/MEASUREMENTS.md, "Compile work and cold code of a restarted rank"); this moves that off the group's
     * critical path, onto a host that would otherwise wait idle.
     */
    private int warmUp(TrainSettings s, RankLayout layout) {
        long t0 = System.nanoTime();
        if (threads == null && layout.localWorldSize() > 1 && KernelOptions.CURRENT.threads() == 0)
            Parallel.setThreads(CpuBinding.threadsPerLocalRank(layout.localWorldSize()));
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
        Tokenizer tok = Tokenizers.byName(s.tokenizer);
        Data data = prepareData(s, tok, quiet);
        Gpt model = initFrom != null ? GptWeights.loadHuggingFace(initFrom, s.dropout, s.seed) : new Gpt(s.modelConfig(tok.vocabSize()), s.seed);
        GptConfig cfg = model.config();
        s.maxSteps = WARM_UP_STEPS;
        s.evalInterval = 0;
        TrainConfig tc = s.toTrainConfig(cfg, 1e9);
        int world = layout.worldSize(), rank = layout.rank();
        DataParallelOptions dpo = dataParallelOptions(tc).withZeroStage(0);
        Trainer trainer = new Trainer(tc, model,
                new BatchSampler(data.train(), tc.batchSize(), cfg.blockSize(), s.seed).shard(rank, world)::next,
                new BatchSampler(data.val(), tc.batchSize(), cfg.blockSize(), s.seed + 1).shard(rank, world)::next,
                FlatParameters.of(model), p -> DataParallel.create(p, model, null, dpo, null));
        // beyond the steps, what a restarted rank runs before its first one: a group's start (its reduce kernels) and,
        // with --resume, the checkpoint's save and load path, here through a throwaway store in this process (a save
        // every step, then a load; planning, staging, CRC32C and applying are shared by every tier), so that the
        // state load into the job is compiled code too
        ProcessGroups.warmUp();
        CheckpointTier scratch = resume ? new CheckpointTier("memory", new Checkpointer(null,
                CheckpointerOptions.fromSystemProperties(), PeerMemoryStorage.over(List.of(new InMemoryStore(60_000)), 0)),
                MEMORY_ROOT, 1, true, 1, true) : null;
        if (scratch != null) trainer.addCheckpointTier(scratch);
        trainer.run(new TrainListener() {});
        if (scratch != null) {
            trainer.resumeNewest(List.of(scratch), false);
            scratch.checkpointer().close();
        }
        System.out.printf("warmed up ahead of joining the job: %d steps of this rank's rows alone%s in %.1f s%n", WARM_UP_STEPS,
                scratch != null ? ", each saved and the last loaded back" : "", (System.nanoTime() - t0) / 1e9);
        return WarmRestart.WARMED_UP;
    }

    /** Enough for the kernels of a step to reach their final compiled form (C2 after OSR) on a cold JVM. */
    private static final int WARM_UP_STEPS = 3;

    /**
     * What a failed run still holds, released now: its process group is aborted first, so that saves and collectives
     * in flight on other threads fail at once instead of at their timeouts, then checkpoint writers and staging, holder
     * connections and the trace are closed. A process that exits would lose them anyway; one restarted in its JVM
     * ({@link WarmRestart}) must not carry them into the next attempt.
     */
    private void releaseAfterFailure(ProcessGroup pg, Throwable cause) {
        if (pg != null) pg.abort(new CommException("rank " + pg.rank() + ": this rank's run failed: " + cause), 0);
        if (holderConnections != null) holderConnections.close();
        for (CheckpointTier t : openTiers) {
            try {
                t.checkpointer().close();
            } catch (RuntimeException e) {
                // the save in flight failed with the run; the run's own error is the one to report
            }
        }
        if (openTrace != null) openTrace.close();
    }

    /** How this attempt's launcher asks it to stop (nothing asks a process that is not restarted warm). */
    private AbortSignal stopSignal = AbortSignal.none();

    /** Tiers and trace of the run, for {@link #releaseAfterFailure}. */
    private final List<CheckpointTier> openTiers = new ArrayList<>();
    private TraceWriter openTrace;

    /** The tokenized training and validation data, and where it came from. */
    private record Data(Path source, Tokens train, Tokens val) { }

    /** What the lead rank's run loop returns: the result, and the best single step's MFU (to check the peak). */
    private record Outcome(Trainer.Result result, double bestStepMfu) { }

    /**
     * Assembles a run from the settings: data, model, strategy, checkpointing; runs it; reports and saves. {@code env}
     * is the process environment as {@link #call} read it once (what the launcher set for this rank).
     */
    private Integer train(TrainSettings s, ProcessGroup pg, Map<String, String> env) throws Exception {
        int rank = pg == null ? 0 : pg.rank(), world = pg == null ? 1 : pg.size();
        boolean lead = rank == 0;
        PrintStream console = lead ? System.out : new PrintStream(OutputStream.nullOutputStream());
        Tokenizer tok = Tokenizers.byName(s.tokenizer);
        Data data = prepareData(s, tok, console);
        MemoryPlan plan = initFrom == null ? checkMemory(s, s.modelConfig(tok.vocabSize()), pg, world, console) : null;
        Gpt model = buildModel(s, tok, world);
        GptConfig cfg = model.config();
        Precision prec = Precision.parse(s.precision);
        if (prec == Precision.BF16) console.println(Bf16Gemm.backend());
        double peak = peakGflops != null ? peakGflops * 1e9 : PeakFlops.measure(prec);
        TrainConfig tc = s.toTrainConfig(cfg, peak);
        describe(console, model, tc, pg, world, peak);

        Path dir = out != null ? out : Path.of("runs", LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        Files.createDirectories(dir);
        if (tc.batchSize() % world != 0)
            throw new IllegalArgumentException("--batch-size " + tc.batchSize() + " (global) must divide by the " + world
                    + " processes; each process takes batch-size / nproc rows");
        if (ckptEvery > 0 && ckptDir == null) throw new IllegalArgumentException("--ckpt-every needs --ckpt-dir");
        if (resume && ckptDir == null && memCkptEvery == 0)
            throw new IllegalArgumentException("--resume needs --ckpt-dir or --mem-ckpt-every");
        if (memCkptEvery < 0) throw new IllegalArgumentException("--mem-ckpt-every must be >= 0: " + memCkptEvery);
        TraceWriter trace = traceOn ? new TraceWriter(dir.resolve("trace-rank" + rank + ".json"), rank) : null;
        openTrace = trace;
        DataParallelOptions dpo = dataParallelOptions(tc);
        // ZeRO-3 takes its shards from the parameters where the model put them: no flat copy of the whole model
        FlatParameters flat = dpo.zeroStage() == 3 && world > 1 ? FlatParameters.layoutOf(model) : FlatParameters.of(model);
        Trainer trainer = new Trainer(tc, model,
                new BatchSampler(data.train(), tc.batchSize(), cfg.blockSize(), s.seed).shard(rank, world)::next,
                new BatchSampler(data.val(), tc.batchSize(), cfg.blockSize(), s.seed + 1).shard(rank, world)::next,
                flat, p -> DataParallel.create(p, model, pg, dpo, trace));
        if (trace != null) trainer.setTrace(trace);
        keepPerRankBatch(trainer, tc, world, console, env.get(RendezvousEnv.JOB_WORLD_SIZE), trainer.parallel().ordered());
        PreemptionSignal.onTerm(trainer::requestStop);
        stopSignal.onStopRequest(why -> trainer.requestStopForRegroup());
        builtAtMs = System.currentTimeMillis();
        List<CheckpointTier> tiers = setUpCheckpointing(trainer, pg, world, console, env);
        drawWeightsUnlessResumed(model);
        long readyAtMs = System.currentTimeMillis(); // a restarted run's state is loaded
        var mem = trainer.parallel().memory();
        console.printf("memory per rank: parameters %.1f MiB, gradients %.1f MiB, optimizer %.1f MiB = %.2f B/param%n",
                mem.parameterBytes() / 1048576.0, mem.gradientBytes() / 1048576.0, mem.optimizerBytes() / 1048576.0,
                mem.bytesPerParameter());
        Outcome outcome = lead ? runWithProgress(trainer, tc, dir, cfg, data.source(), readyAtMs, RecoveryTimeline.fromEnv(env))
                : new Outcome(trainer.run(new TrainListener() {}), 0);
        closeTiers(tiers);
        if (trace != null) trace.close();
        Trainer.Result result = outcome.result();
        if (result.stopRequested() && result.forRegroup()) {
            console.printf("%nstopped after %d steps for the group to change (its launcher asked: a node rejoins)%s%n", result.steps(),
                    tiers.isEmpty() ? "; no checkpoint tier, so the next attempt starts from the last checkpoint found, if any"
                            : "; that step is saved, the next attempt continues from it");
            return WarmRestart.STOPPED_FOR_REGROUP;
        }
        if (result.stopRequested()) {
            console.printf("%nstopped on SIGTERM after %d steps%s%n", result.steps(),
                    ckptDir != null ? "; checkpoint in " + ckptDir + " (continue with --resume)" : " (no --ckpt-dir: nothing saved to disk)");
            return 0;
        }
        reportPeakRss(pg, plan, trainer.parallel().memory(), console);
        trainer.parallel().unshard(); // ZeRO-3: every rank gathers the parameters back before the lead saves and samples
        if (!lead) return 0;
        report(console, outcome, peak, data.train(), tc.precision());
        writeOutputs(model, tok, s, dir);
        return 0;
    }

    private Data prepareData(TrainSettings s, Tokenizer tok, PrintStream console) {
        Path source = data != null ? data : DefaultData.jdkSources();
        String glob = dataGlob != null ? dataGlob : (data == null ? "*.java" : "*");
        console.printf("data: %s (%s, tokenizer %s, up to %,d bytes)%n", source, glob, tok.name(), s.dataMaxBytes);
        long prepStart = System.nanoTime();
        Corpus corpus = Corpus.prepare(CorpusOptions.of(source, tok).withFileGlob(glob).withMaxBytes(s.dataMaxBytes),
                CorpusProgress.NONE);
        Tokens train = corpus.openTrain(), val = corpus.openVal();
        console.printf("prepared %s in %.1f s%n", corpus.directory(), (System.nanoTime() - prepStart) / 1e9);
        console.printf("tokens: %,d train, %,d val%n", train.size(), val.size());
        return new Data(source, train, val);
    }

    /**
     * Predicts, before the model exists, what this rank will hold ({@link MemoryPlan}) and refuses at once, with the
     * figures and the strategies that would fit, when that exceeds what the rank can use: its heap, and its share of
     * the memory the host has available (ranks on one host divide it). An OutOfMemoryError mid-step is the
     * alternative.
     */
    private MemoryPlan checkMemory(TrainSettings s, GptConfig cfg, ProcessGroup pg, int world, PrintStream console) {
        Precision prec = Precision.parse(s.precision);
        long activations = Gpt.activationBytes(cfg, Math.max(1, s.batchSize / world), prec, s.activationCheckpointing);
        Gpt.ParameterCounts u = Gpt.parameterCounts(cfg);
        int local = 1;
        if (pg != null) for (int r = 0; r < world; r++) if (r != pg.rank() && pg.topology().sameHost(pg.rank(), r)) local++;
        int shardRanks = shardScope() == ShardScope.HOST ? local : world; // hybrid sharding: a host holds a whole replica
        int microSteps = Math.max(1, s.gradAccum);
        MemoryPlan plan = MemoryPlan.predict(zero, shardRanks, u.total(), u.block(), u.root(), u.largest(), activations, microSteps);
        MemoryLimits limits = MemoryLimits.ofThisJvm(local);
        console.printf("memory per rank, predicted: %s; this rank can use %s%n", plan.describe(), limits.describe());
        if (limits.fits(plan)) return plan;
        List<String> fit = new ArrayList<>();
        for (int stage = 0; stage <= 3 && world > 1; stage++) {
            MemoryPlan other = MemoryPlan.predict(stage, stage == 0 ? world : shardRanks, u.total(), u.block(), u.root(), u.largest(),
                    activations, microSteps);
            if (stage != zero && limits.fits(other)) fit.add(String.format(Locale.ROOT, "--zero %d (%.2f GiB)", stage, other.peak() / GIB));
        }
        throw new IllegalArgumentException(String.format(Locale.ROOT,
                "this run will not fit: %s, but each rank can use %s. %s", plan.describe(), limits.describe(),
                fit.isEmpty() ? "No ZeRO stage fits on " + world + " rank(s): use more ranks or hosts, "
                        + (s.activationCheckpointing ? "" : "--activation-checkpointing, ") + "a smaller "
                        + "--batch-size, or a larger heap (JAVA_TOOL_OPTIONS=-Xmx...) if the host has the memory."
                        : "Fits: " + String.join(", ", fit) + "."));
    }

    private static final double GIB = 1L << 30;


    /**
     * Every rank's peak resident set after training, beside the prediction (collective), and what the strategy holds
     * on this rank (its state and pooled gather/reduce buffers) beside the plan's figures for them.
     */
    private static void reportPeakRss(ProcessGroup pg, MemoryPlan plan, MemoryReport held, PrintStream console) {
        long[] mine = {HostMemory.peakRssBytes()};
        long[] all = mine;
        if (pg != null) {
            all = new long[pg.size()];
            pg.allGather(MemorySegment.ofArray(mine), MemorySegment.ofArray(all), 1, DType.INT64);
        }
        StringBuilder sb = new StringBuilder();
        for (long b : all) sb.append(sb.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.2f", b / GIB));
        console.printf("peak RSS per rank: %s GiB%s%n", sb, plan == null ? ""
                : String.format(Locale.ROOT, " (predicted %.2f GiB of training state and activations)", plan.peak() / GIB));
        if (plan != null) {
            console.printf("held by the strategy: state %.2f GiB (predicted %.2f)%s%n", held.totalBytes() / GIB, plan.state() / GIB,
                    plan.stage() != 3 ? "" : String.format(Locale.ROOT, ", gather and reduce-scatter buffers %.2f GiB (predicted at most %.2f)",
                            held.stagingBytes() / GIB, plan.gathered() / GIB));
        }
    }

    /**
     * GPT-2 weights from --init-from, or a fresh model of the preset's shape. With --resume its weights are drawn only
     * if no checkpoint is loaded ({@link #drawWeightsUnlessResumed}): a resume would overwrite them. ZeRO-3 draws at
     * once, since it takes the parameters apart before the load.
     */
    private Gpt buildModel(TrainSettings s, Tokenizer tok, int world) {
        if (initFrom != null) return GptWeights.loadHuggingFace(initFrom, s.dropout, s.seed);
        GptConfig cfg = s.modelConfig(tok.vocabSize());
        boolean sharded = zero == 3 && world > 1;
        return resume && !sharded ? Gpt.withWeightsDeferred(cfg, s.seed) : new Gpt(cfg, s.seed);
    }

    /** After --resume: the deferred weights are drawn when nothing was loaded, and dropped when a checkpoint was. */
    private void drawWeightsUnlessResumed(Gpt model) {
        if (resumedFrom == null) model.drawWeights();
        else model.discardDeferredWeights();
    }

    private void describe(PrintStream console, Gpt model, TrainConfig tc, ProcessGroup pg, int world, double peak) {
        GptConfig cfg = model.config();
        console.printf("model: %d layers, %d heads, width %d, context %d, vocab %d (padded %d), %,d parameters; "
                        + "global batch %d x %d, grad accum %d; %d process(es) x %d threads, %s; %s; peak %.1f GFLOP/s per process%n",
                cfg.nLayer(), cfg.nHead(), cfg.nEmbd(), cfg.blockSize(), cfg.vocabSize(), cfg.paddedVocabSize(),
                model.parameterCount(), tc.batchSize(), cfg.blockSize(), tc.gradAccum(), world, Parallel.threads(),
                (world == 1 ? "single process" : zero == 0 ? "DDP" : "ZeRO-" + zero
                        + (shardScope() != ShardScope.HOST ? "" : pg != null && pg.topology().spansHosts()
                        ? " sharded within each host, replicated across hosts (HSDP)"
                        : " (--shard-within host on one host: sharded across all ranks)"))
                        + (world > 1 && gradWire.equalsIgnoreCase("bf16") ? " (bf16 gradients on the wire)" : "")
                        + (gradReduce.equalsIgnoreCase("ordered") ? " (gradients summed in a fixed order)" : ""),
                tc.precision() == Precision.BF16 ? "bf16 matmuls, fp32 master weights" : "fp32", peak / 1e9);
        if (pg != null) {
            console.printf("ranks: %d on %d host(s): %s%s%n", world, pg.topology().hosts(), pg.topology(),
                    CpuBinding.bound().map(c -> "; rank " + pg.rank() + " bound to CPUs " + CpuBinding.format(c)).orElse(""));
            long bucket = bucketBytes();
            console.printf("gradient buckets: %.1f MiB%s%n", DataParallelOptions.defaults().withBuckets(1L << 20,
                    bucket).bucketBytesFor(pg) / (double) (1 << 20), bucket == DataParallelOptions.AUTO_BUCKET
                    ? " (auto: about 10 ms on the slowest link, " + pg.costModel() + ")" : "");
            if (world > 1) {
                console.printf("link figures (%s): %s%n", pg.measuredLinkCosts() != null
                        ? "measured at start; JTRAIN_LINK_COSTS set to them starts a run without measuring"
                        : "not measured: from JTRAIN_LINK_COSTS or this job's earlier start", pg.linkCosts().format());
            }
        }
    }

    private ShardScope shardScope() {
        return switch (shardWithin.toLowerCase(Locale.ROOT)) {
            case "world" -> ShardScope.WORLD;
            case "host" -> ShardScope.HOST;
            default -> throw new IllegalArgumentException("--shard-within must be world or host, got " + shardWithin);
        };
    }

    private DataParallelOptions dataParallelOptions(TrainConfig tc) {
        DataParallelOptions o = DataParallelOptions.defaults()
                .withZeroStage(zero).withOverlap(!noOverlap).withWeightDecay(tc.weightDecay()).withShardWithin(shardScope())
                .withBuckets(1L << 20, bucketBytes())
                .withGradWire(switch (gradWire.toLowerCase(Locale.ROOT)) {
                    case "fp32" -> GradWire.FP32;
                    case "bf16" -> GradWire.BF16;
                    default -> throw new IllegalArgumentException("--grad-wire must be fp32 or bf16, got " + gradWire);
                })
                .withGradReduce(switch (gradReduce.toLowerCase(Locale.ROOT)) {
                    case "fast" -> GradReduce.FAST;
                    case "ordered" -> GradReduce.ORDERED;
                    default -> throw new IllegalArgumentException("--grad-reduce must be fast or ordered, got " + gradReduce);
                });
        o.validate();
        return o;
    }

    /**
     * A job that lost nodes (jtrain launch --min-nodes) runs on fewer ranks than it was launched with: the global batch
     * is kept (each rank takes more rows), and, where the rows divide, each rank runs them as accumulated pieces of
     * the size it had, so its activation memory stays as it was. Under {@code --grad-reduce ordered}, with a power of
     * two of pieces per rank, each piece stands for a rank as launched and the run stays bitwise the launched job's.
     */
    static void keepPerRankBatch(Trainer trainer, TrainConfig tc, int world, PrintStream console, String launched, boolean ordered) {
        int jobWorld = launched == null ? world : Integer.parseInt(launched);
        if (jobWorld <= world) return;
        int rows = tc.batchSize() / world, before = tc.batchSize() / jobWorld;
        if (jobWorld % world == 0 && tc.batchSize() % jobWorld == 0) {
            int pieces = jobWorld / world;
            trainer.setMicroBatchSplit(pieces);
            console.printf("the job shrank from %d to %d ranks: global batch %d kept; each rank runs its %d rows as %d accumulated"
                    + " pieces of %d, as before%s%n", jobWorld, world, tc.batchSize(), rows, pieces, before,
                    !ordered ? " (sums in another order: not bitwise the launched job's; --grad-reduce ordered would keep it)"
                            : PairwiseOrder.groupsAreSubtrees(pieces) || world == 1
                            ? "; gradients summed in the fixed order: bitwise as on " + jobWorld + " ranks"
                            : "; " + pieces + " pieces per rank is not a power of two, so the fixed order can not be kept: not bitwise");
        } else {
            console.printf("the job shrank from %d to %d ranks: global batch %d kept, but each rank now runs %d rows at once"
                    + " (%d before: %d ranks do not divide %d), so activation memory per rank grows %.1fx%s%n", jobWorld, world,
                    tc.batchSize(), rows, Math.max(1, before), world, jobWorld, rows / (double) Math.max(1, before),
                    ordered ? "; not bitwise the launched job's (its ranks' rows can not be kept apart)" : "");
        }
    }

    /** Root of the in-memory checkpoints in the holders (a name, not a directory). */
    static final Path MEMORY_ROOT = Path.of("ram");

    /**
     * The checkpoint tiers (disk for --ckpt-dir, memory for --mem-ckpt-every; disk first, so a stop on SIGTERM saves
     * there), after --resume loaded the newest checkpoint any of them holds (memory first on a tie).
     */
    private List<CheckpointTier> setUpCheckpointing(Trainer trainer, ProcessGroup pg, int world, PrintStream console,
                                                    Map<String, String> env) {
        List<CheckpointTier> tiers = new ArrayList<>();
        CheckpointerOptions options = CheckpointerOptions.fromSystemProperties();
        if (ckptDir != null) {
            tiers.add(new CheckpointTier("disk", new Checkpointer(pg, options), ckptDir, ckptEvery, asyncCkpt, keepLast));
            openTiers.add(tiers.getLast());
        }
        if (memCkptEvery > 0) {
            String holders = env.get(RendezvousEnv.CKPT_HOLDERS);
            if (holders == null || holders.isBlank())
                throw new IllegalArgumentException("--mem-ckpt-every keeps checkpoints in the memory of the launchers, which outlive the"
                        + " ranks they restart: run under `jtrain launch` (it sets " + RendezvousEnv.CKPT_HOLDERS + ")");
            int node = Integer.parseInt(env.getOrDefault(RendezvousEnv.NODE_RANK, "0"));
            List<String> holderAddresses = List.of(holders.split(","));
            int nodes = holderAddresses.size();
            // every node holds the whole state (DDP, or sharding within each host): each node saves a complete copy
            // into its own launcher, over its own ranks, and nothing crosses the network (PeerMemoryStorage)
            boolean wholeOnEachNode = zero == 0 || (shardScope() == ShardScope.HOST && pg != null && pg.topology().hosts() == nodes);
            Placement placement = nodes > 1 && pg != null && wholeOnEachNode ? Placement.OWN_NODE : Placement.BUDDY;
            ProcessGroup ckptGroup = placement == Placement.OWN_NODE ? nodeGroup(pg, node, nodes) : pg;
            checkHoldersFit(trainer, nodes, placement, env.get(RendezvousEnv.CKPT_HOLDER_BYTES));
            String shm = env.get(RendezvousEnv.CKPT_SHM_DIR);
            PeerMemoryStorage storage = PeerMemoryStorage.connect(holderAddresses, node,
                    env.get(RendezvousEnv.JOB_TOKEN), 60_000, shm == null || shm.isBlank() ? null : Path.of(shm), placement);
            holderConnections = storage;
            tiers.add(new CheckpointTier("memory", new Checkpointer(ckptGroup, options, storage), MEMORY_ROOT, memCkptEvery, true, 2, true));
            openTiers.add(tiers.getLast());
            if (placement == Placement.OWN_NODE)
                console.printf("in-memory checkpoints every %d steps: each node's ranks save a whole copy into their node's launcher"
                        + " (holders %s)%n", memCkptEvery, holders);
            else
                console.printf("in-memory checkpoints every %d steps into node %d's launcher and node %d's (holders %s)%n", memCkptEvery,
                        node, (node + 1) % nodes, holders);
        }
        tiers.forEach(trainer::addCheckpointTier);
        if (!resume) return tiers;
        var r = trainer.resumeNewest(tiers.reversed(), world > 1);
        if (r.isEmpty()) {
            console.printf("no committed checkpoint %s; starting from step 0%n", tiers.stream().map(t -> t.name().equals("disk")
                    ? "in " + ckptDir : "in the nodes' memory").collect(Collectors.joining(" or ")));
            return tiers;
        }
        for (String f : r.get().fellBack()) console.printf("could not resume from %s; trying the next tier%n", f);
        var lr = r.get().report();
        for (String skipped : lr.skipped())
            console.printf("skipped checkpoint %s (left in place; inspect it with `jtrain ckpt verify`)%n", skipped);
        console.printf("resumed from %s %s (saved by %d process(es)) at step %d: read %.1f MiB in %.2f s%n",
                r.get().tier().name().equals("memory") ? "the nodes' memory," : "disk,", lr.directory(), lr.savedWorldSize(),
                trainer.startStep(), lr.bytesRead() / 1048576.0, lr.totalNanos() / 1e9);
        resumedFrom = r.get().tier().name();
        return tiers;
    }

    /**
     * This node's ranks as a group (the launcher numbers node n's ranks n·L .. n·L+L-1, L per node). Collective over
     * {@code pg}: every rank creates every node's group, in node order.
     */
    private static ProcessGroup nodeGroup(ProcessGroup pg, int node, int nodes) {
        int perNode = pg.size() / nodes;
        if (perNode * nodes != pg.size())
            throw new IllegalStateException(pg.size() + " ranks do not split evenly over " + nodes + " nodes");
        ProcessGroup mine = null;
        for (int n = 0; n < nodes; n++) {
            int[] ranks = new int[perNode];
            for (int i = 0; i < perNode; i++) ranks[i] = n * perNode + i;
            var g = pg.newGroup(ranks);
            if (n == node) mine = g.orElseThrow(() -> new IllegalStateException("rank " + pg.rank() + " is not in node " + node + "'s group"));
        }
        return mine;
    }

    /** The tier the run resumed from ("disk", "memory"), or null. */
    private String resumedFrom;

    /**
     * When this run started (the JVM, or the launcher's message for a warm attempt), its process group was ready, and
     * data, model and strategy were (a restart's report splits on them); whether an earlier attempt ran in this JVM.
     */
    private long startedAtMs, groupReadyAtMs, builtAtMs;
    private boolean warmStart;

    /**
     * Refuses --mem-ckpt-every up front when a node's launcher could not hold its share: the parameters and AdamW's two
     * moments (12 bytes per parameter) for the two steps kept and the one being saved; all of it with OWN_NODE (each
     * node keeps a whole copy), else its own node's shards and its buddy's (2/n of it, all with one node).
     */
    static void checkHoldersFit(Trainer trainer, int nodes, Placement placement, String budgetEnv) {
        if (budgetEnv == null) return;
        long budget = Long.parseLong(budgetEnv);
        long state = 12L * trainer.parameters().size();
        boolean whole = placement == Placement.OWN_NODE || nodes == 1;
        long need = whole ? 3 * state : 3 * state * 2 / nodes;
        if (need > budget)
            throw new IllegalArgumentException(String.format("--mem-ckpt-every: each node's launcher would hold up to %.2f GiB"
                    + " (3 checkpoints: 2 kept and 1 being saved, of %.2f GiB of state, %s), but it holds at most %.2f GiB (2/5 of"
                    + " its host's memory); checkpoint to disk only%s", need / 1073741824.0, state / 1073741824.0,
                    whole ? "all of it: every node keeps a whole copy" : "2/" + nodes + " of it: its node's shards and its buddy's",
                    budget / 1073741824.0, whole ? "" : ", or spread the job over more nodes (each holds 2/n)"));
    }

    /** Connections to the checkpoint memory holders, or null. */
    private PeerMemoryStorage holderConnections;

    private void closeTiers(List<CheckpointTier> tiers) {
        for (CheckpointTier t : tiers) {
            try {
                t.checkpointer().close();
            } catch (CheckpointException e) {
                if (t.name().equals("disk")) throw e;
                System.err.println("the last " + t.name() + " checkpoint failed (the disk one stands): " + e.getMessage());
            }
        }
        if (holderConnections != null) holderConnections.close();
    }

    /** The lead rank's run: progress bar or log lines, metrics.jsonl, and loss.png at the end. */
    private Outcome runWithProgress(Trainer trainer, TrainConfig tc, Path dir, GptConfig cfg, Path source, long readyAtMs,
                                    Optional<RecoveryTimeline> recovery) throws Exception {
        boolean fancy = !noProgress && System.console() != null;
        Path metrics = dir.resolve("metrics.jsonl");
        long lastStepBefore = recovery.isPresent() ? MetricsLog.lastStep(metrics) : -1;
        try (MetricsLog log = new MetricsLog(metrics, recovery.isPresent());
             ProgressReporter progress = new ProgressReporter(log, tc.maxSteps(), tc.maxSeconds(), fancy, 10)) {
            TrainListener listener = recovery.<TrainListener>map(r -> new RecoveryReport(r, new RecoveryTimeline.Startup(
                    startedAtMs, warmStart, groupReadyAtMs, builtAtMs), readyAtMs, trainer.startStep(), resumedFrom, lastStepBefore,
                    progress, log, System.out)).orElse(progress);
            Trainer.Result result = trainer.run(listener);
            progress.close();
            LossPlot.write(dir.resolve("loss.png"), "jtrain " + cfg.nLayer() + "L/" + cfg.nEmbd() + " on " + source.getFileName(),
                    progress.steps, progress.losses, progress.evalSteps, progress.valLosses);
            return new Outcome(result, progress.maxMfu);
        }
    }

    /** The closing line; when a step beat the cached SGEMM peak, the peak is measured again first. */
    private void report(PrintStream console, Outcome outcome, double peak, Tokens train, Precision precision) {
        Trainer.Result result = outcome.result();
        double unigram = UnigramEntropy.of(train);
        double mfu = result.meanMfu();
        if (outcome.bestStepMfu() > 1 && peakGflops == null) {
            // A step beat the cached SGEMM peak: that peak was measured on busy cores. The other ranks are done, so
            // the cores are free now: measure again, cache it for later runs, and report against it.
            double fresh = PeakFlops.remeasureAfterBeaten(peak, precision);
            if (fresh > peak) {
                console.printf("%nnote: steps reached %.0f%% MFU against the cached peak of %.1f GFLOP/s per process (%s), which"
                                + " must have been measured while the cores were busy; re-measured now: %.1f GFLOP/s, cached for later runs%n",
                        100 * outcome.bestStepMfu(), peak / 1e9, PeakFlops.cacheFile(), fresh / 1e9);
                mfu *= peak / fresh;
            } else {
                console.printf("%nnote: steps reached %.0f%% MFU, yet SGEMM measures %.1f GFLOP/s per process now (cached: %.1f);"
                                + " the cores may be busy, or the model's FLOP count overstates its work; --peak-gflops sets the peak%n",
                        100 * outcome.bestStepMfu(), fresh / 1e9, peak / 1e9);
            }
        }
        console.printf("%ndone: %d steps in %s, %,.0f tokens/s, MFU %.1f%%; val loss %.4f nats/token "
                        + "(unigram entropy of the data: %.4f)%n",
                result.steps(), ProgressReporter.formatSeconds(result.seconds()), result.meanTokensPerSecond(),
                100 * mfu, result.lastValLoss(), unigram);
    }

    /** model.safetensors (Hugging Face layout) and, if asked for, a generated sample. */
    private static void writeOutputs(Gpt model, Tokenizer tok, TrainSettings s, Path dir) throws Exception {
        GptWeights.saveHuggingFace(model, dir.resolve("model.safetensors"));
        if (s.sampleTokens > 0) {
            int[] prompt = tok.encode(tok.name().equals("byte") ? "public " : "The ");
            int[] gen = model.generate(prompt, s.sampleTokens, 0.8f, 40, new Rng(s.seed));
            String text = tok.decode(gen, 0, gen.length);
            Files.writeString(dir.resolve("sample.txt"), text, StandardCharsets.UTF_8);
            System.out.println("\n--- sample (temperature 0.8, top-k 40) ---\n" + text + "\n---");
        }
        System.out.println("run directory: " + dir.toAbsolutePath() + " (metrics.jsonl, loss.png, model.safetensors"
                + (s.sampleTokens > 0 ? ", sample.txt)" : ")"));
    }

    /** --bucket-mb: "auto" or a size in MiB. */
    private long bucketBytes() {
        if (bucketMb.equalsIgnoreCase("auto")) return DataParallelOptions.AUTO_BUCKET;
        double mb;
        try {
            mb = Double.parseDouble(bucketMb);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--bucket-mb must be auto or a size in MiB, got " + bucketMb);
        }
        if (!(mb > 0)) throw new IllegalArgumentException("--bucket-mb must be positive, got " + bucketMb);
        return Math.max(64, (long) (mb * (1 << 20)));
    }

    private void applyOverrides(TrainSettings s) {
        if (tokenizer != null) s.tokenizer = tokenizer;
        if (nLayer != null) s.nLayer = nLayer;
        if (nHead != null) s.nHead = nHead;
        if (nEmbd != null) s.nEmbd = nEmbd;
        if (blockSize != null) s.blockSize = blockSize;
        if (dropout != null) s.dropout = dropout;
        if (batchSize != null) s.batchSize = batchSize;
        if (gradAccum != null) s.gradAccum = gradAccum;
        if (maxSteps != null) s.maxSteps = maxSteps;
        if (maxSeconds != null) s.maxSeconds = maxSeconds;
        if (lr != null) s.learningRate = lr;
        if (minLr != null) s.minLearningRate = minLr;
        if (warmup != null) s.warmupSteps = warmup;
        if (decaySteps != null) s.decaySteps = decaySteps;
        if (weightDecay != null) s.weightDecay = weightDecay;
        if (gradClip != null) s.gradClip = gradClip;
        if (evalInterval != null) s.evalInterval = evalInterval;
        if (evalBatches != null) s.evalBatches = evalBatches;
        if (seed != null) s.seed = seed;
        if (ckpt != null) s.activationCheckpointing = ckpt;
        if (precision != null) s.precision = Precision.parse(precision).label(); // a bad value fails here, before any work
        if (dataMaxBytes != null) s.dataMaxBytes = dataMaxBytes;
        if (sampleTokens != null) s.sampleTokens = sampleTokens;
    }
}
