package dev.jtrain.cli;

import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.data.BatchSampler;
import dev.jtrain.gpt.data.Corpus;
import dev.jtrain.gpt.data.CorpusOptions;
import dev.jtrain.gpt.data.CorpusProgress;
import dev.jtrain.gpt.data.Tokenizer;
import dev.jtrain.gpt.data.Tokenizers;
import dev.jtrain.gpt.data.Tokens;
import dev.jtrain.gpt.GptWeights;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.train.TrainConfig;
import dev.jtrain.train.Trainer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Callable;

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
    @Option(names = "--tokenizer", description = "byte or gpt2") String tokenizer;
    @Option(names = "--n-layer") Integer nLayer;
    @Option(names = "--n-head") Integer nHead;
    @Option(names = "--n-embd") Integer nEmbd;
    @Option(names = "--block-size") Integer blockSize;
    @Option(names = "--dropout") Float dropout;
    @Option(names = "--batch-size") Integer batchSize;
    @Option(names = "--grad-accum") Integer gradAccum;
    @Option(names = "--max-steps") Integer maxSteps;
    @Option(names = "--max-seconds", description = "Wall-clock budget; 0 = none.") Double maxSeconds;
    @Option(names = "--lr") Float lr;
    @Option(names = "--min-lr") Float minLr;
    @Option(names = "--warmup-steps") Integer warmup;
    @Option(names = "--decay-steps") Integer decaySteps;
    @Option(names = "--weight-decay") Float weightDecay;
    @Option(names = "--grad-clip") Float gradClip;
    @Option(names = "--eval-interval") Integer evalInterval;
    @Option(names = "--eval-batches") Integer evalBatches;
    @Option(names = "--seed") Long seed;
    @Option(names = "--activation-checkpointing", description = "Recompute block activations in backward.") Boolean ckpt;
    @Option(names = "--data-max-bytes", description = "Use at most this many bytes of source text.") Long dataMaxBytes;
    @Option(names = "--sample-tokens", description = "Tokens to generate after training.") Integer sampleTokens;
    @Option(names = "--threads", description = "Kernel threads (default: all cores).") Integer threads;
    @Option(names = "--peak-gflops", description = "Peak GFLOP/s for MFU (default: measured SGEMM at startup).") Double peakGflops;
    @Option(names = "--init-from", description = "Start from GPT-2 weights (Hugging Face safetensors; config.json beside it).") Path initFrom;
    @Option(names = "--out", description = "Run directory for metrics.jsonl, loss.png, sample.txt, model.safetensors (default: runs/<time>).")
    Path out;
    @Option(names = "--no-progress", description = "Plain log lines instead of a progress bar.") boolean noProgress;

    @Override
    public Integer call() throws Exception {
        if (threads != null) Parallel.setThreads(threads);
        TrainSettings s = TrainSettings.load(preset);
        applyOverrides(s);
        Tokenizer tok = Tokenizers.byName(s.tokenizer);
        Path source = data != null ? data : DefaultData.jdkSources();
        String glob = dataGlob != null ? dataGlob : (data == null ? "*.java" : "*");
        System.out.printf("data: %s (%s, tokenizer %s, up to %,d bytes)%n", source, glob, tok.name(), s.dataMaxBytes);
        long prepStart = System.nanoTime();
        Corpus corpus = Corpus.prepare(CorpusOptions.of(source, tok).withFileGlob(glob).withMaxBytes(s.dataMaxBytes),
                CorpusProgress.NONE);
        Tokens train = corpus.openTrain(), val = corpus.openVal();
        System.out.printf("prepared %s in %.1f s%n", corpus.directory(), (System.nanoTime() - prepStart) / 1e9);
        System.out.printf("tokens: %,d train, %,d val%n", train.size(), val.size());

        Gpt model;
        GptConfig cfg;
        if (initFrom != null) {
            model = GptWeights.loadHuggingFace(initFrom, s.dropout, s.seed);
            cfg = model.config();
        } else {
            cfg = s.modelConfig(tok.vocabSize());
            model = new Gpt(cfg, s.seed);
        }
        double peak = peakGflops != null ? peakGflops * 1e9 : PeakFlops.measure();
        TrainConfig tc = s.toTrainConfig(cfg, peak);
        System.out.printf("model: %d layers, %d heads, width %d, context %d, vocab %d (padded %d), %,d parameters; "
                        + "batch %d x %d, grad accum %d; %d threads; peak %.1f GFLOP/s%n",
                cfg.nLayer(), cfg.nHead(), cfg.nEmbd(), cfg.blockSize(), cfg.vocabSize(), cfg.paddedVocabSize(),
                model.parameterCount(), tc.batchSize(), cfg.blockSize(), tc.gradAccum(), Parallel.threads(), peak / 1e9);

        Path dir = out != null ? out : Path.of("runs", LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        Files.createDirectories(dir);
        Trainer trainer = new Trainer(tc, model, new BatchSampler(train, tc.batchSize(), cfg.blockSize(), s.seed)::next,
                new BatchSampler(val, tc.batchSize(), cfg.blockSize(), s.seed + 1)::next);
        Trainer.Result result;
        boolean fancy = !noProgress && System.console() != null;
        try (MetricsLog log = new MetricsLog(dir.resolve("metrics.jsonl"));
             ProgressReporter progress = new ProgressReporter(log, tc.maxSteps(), tc.maxSeconds(), fancy, 10)) {
            result = trainer.run(progress);
            progress.close();
            LossPlot.write(dir.resolve("loss.png"), "jtrain " + cfg.nLayer() + "L/" + cfg.nEmbd() + " on " + source.getFileName(),
                    progress.steps, progress.losses, progress.evalSteps, progress.valLosses);
        }
        double unigram = UnigramEntropy.of(train);
        System.out.printf("%ndone: %d steps in %s, %,.0f tokens/s, MFU %.1f%%; val loss %.4f nats/token "
                        + "(unigram entropy of the data: %.4f)%n",
                result.steps(), ProgressReporter.formatSeconds(result.seconds()), result.meanTokensPerSecond(),
                100 * result.meanMfu(), result.lastValLoss(), unigram);
        GptWeights.saveHuggingFace(model, dir.resolve("model.safetensors"));
        if (s.sampleTokens > 0) {
            int[] prompt = tok.encode(tok.name().equals("byte") ? "public " : "The ");
            int[] gen = model.generate(prompt, s.sampleTokens, 0.8f, 40, new Rng(s.seed));
            String text = tok.decode(gen, 0, gen.length);
            Files.writeString(dir.resolve("sample.txt"), text, StandardCharsets.UTF_8);
            System.out.println("\n--- sample (temperature 0.8, top-k 40) ---\n" + text + "\n---");
        }
        System.out.println("run directory: " + dir.toAbsolutePath() + " (metrics.jsonl, loss.png, model.safetensors, sample.txt)");
        return 0;
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
        if (dataMaxBytes != null) s.dataMaxBytes = dataMaxBytes;
        if (sampleTokens != null) s.sampleTokens = sampleTokens;
    }
}
