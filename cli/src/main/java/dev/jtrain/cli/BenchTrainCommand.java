package dev.jtrain.cli;

import dev.jtrain.autograd.SavedMemory;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.data.Tokenizers;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.AdamW;
import dev.jtrain.optim.FlatOptimizer;
import dev.jtrain.optim.GradClip;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.autograd.Autocast;
import dev.jtrain.tensor.kernel.Bf16Gemm;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;

import com.fasterxml.jackson.databind.ObjectMapper;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jtrain bench train}: training-step throughput of a preset's model on a fixed random batch (the same
 * protocol as the PyTorch peer's gpt_bench.py: warm-up steps, then the median of timed steps of
 * zero_grad + forward + backward + AdamW), plus the peak activation memory held for backward. With
 * {@code --compare-checkpointing} it runs with and without activation checkpointing and reports both.
 */
@Command(name = "train", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Training-step throughput (tokens/s, MFU) and activation memory of a preset's model on random tokens.")
final class BenchTrainCommand implements Callable<Integer> {
    @Option(names = "--preset", defaultValue = "small", description = "Preset (default: ${DEFAULT-VALUE}).") String preset;
    @Option(names = "--steps", defaultValue = "10", description = "Timed training steps (default: ${DEFAULT-VALUE}).") int steps;
    @Option(names = "--warmup", defaultValue = "3", description = "Untimed steps first, for JIT warm-up (default: ${DEFAULT-VALUE}).") int warmup;
    @Option(names = "--threads", description = "Kernel threads (default: all cores).") Integer threads;
    @Option(names = "--vocab", description = "Vocabulary size (default: the preset tokenizer's).") Integer vocab;
    @Option(names = "--batch-size", description = "Sequences per step (default: the preset's).") Integer batchSize;
    @Option(names = "--activation-checkpointing", description = "Recompute block activations in backward.") boolean ckpt;
    @Option(names = "--compare-checkpointing", description = "Run without and with activation checkpointing.") boolean compare;
    @Option(names = "--precision", defaultValue = "fp32", description = "Matmul precision: fp32 or bf16 (bf16 operands, fp32 "
            + "accumulation and master weights) (default: ${DEFAULT-VALUE}).") String precision;
    @Option(names = "--compare-precision", description = "Run in fp32 and in bf16, and compare speed and activation memory.") boolean comparePrecision;
    @Option(names = "--peak-gflops", description = "Peak GFLOP/s for MFU (default: the measured matmul peak in the run's precision).") Double peakGflops;
    @Option(names = "--json", description = "Print JSON instead of the table.") boolean json;

    @Override
    public Integer call() throws Exception {
        if (threads != null) Parallel.setThreads(threads);
        TrainSettings s = TrainSettings.load(preset);
        if (batchSize != null) s.batchSize = batchSize;
        int v = vocab != null ? vocab : Tokenizers.byName(s.tokenizer).vocabSize();
        GptConfig cfg = s.modelConfig(v);
        List<Precision> precisions = comparePrecision ? List.of(Precision.FP32, Precision.BF16) : List.of(Precision.parse(precision));
        if (precisions.contains(Precision.BF16)) System.err.println("jtrain: " + Bf16Gemm.backend());
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Precision p : precisions) {
            double peak = peakGflops != null ? peakGflops * 1e9 : PeakFlops.measure(p);
            if (compare || !ckpt) rows.add(run(cfg, s.batchSize, false, peak, p));
            if (compare || ckpt) rows.add(run(cfg, s.batchSize, true, peak, p));
        }
        if (json) {
            System.out.println(new ObjectMapper().writeValueAsString(rows.size() == 1 ? rows.get(0) : rows));
        } else {
            System.out.printf("GPT L=%d H=%d D=%d T=%d vocab=%d batch=%d threads=%d%n", cfg.nLayer(), cfg.nHead(),
                    cfg.nEmbd(), cfg.blockSize(), cfg.vocabSize(), s.batchSize, Parallel.threads());
            for (var r : rows)
                System.out.printf("  %s checkpointing=%-5s step median %.1f ms (mean %.1f) -> %,.0f tokens/s, MFU %.1f%% of %.1f GFLOP/s, activations held %.1f MiB, step working set %.1f MiB%n",
                        r.get("precision"), r.get("activationCheckpointing"), r.get("stepMs"), r.get("meanStepMs"), r.get("tokensPerSecond"),
                        100 * (double) r.get("mfu"), (double) r.get("peakGflops"), (long) r.get("activationBytes") / 1048576.0,
                        (long) r.get("workingSetBytes") / 1048576.0);
            if (compare && rows.size() >= 2) {
                double t0 = (double) rows.get(0).get("stepMs"), t1 = (double) rows.get(1).get("stepMs");
                long m0 = (long) rows.get(0).get("activationBytes"), m1 = (long) rows.get(1).get("activationBytes");
                System.out.printf("  activation checkpointing: %.0f%% less activation memory, %.0f%% longer steps%n",
                        100.0 * (m0 - m1) / m0, 100.0 * (t1 - t0) / t0);
            }
            if (comparePrecision) {
                var f = rows.getFirst();
                var b = rows.get(rows.size() / 2);
                System.out.printf("  bf16 against fp32: %.2fx tokens/s, activations %.2fx, step working set %.2fx%n",
                        (double) b.get("tokensPerSecond") / (double) f.get("tokensPerSecond"),
                        (double) (long) b.get("activationBytes") / (long) f.get("activationBytes"),
                        (double) (long) b.get("workingSetBytes") / (long) f.get("workingSetBytes"));
            }
        }
        return 0;
    }

    private Map<String, Object> run(GptConfig cfg, int batch, boolean checkpointing, double peak, Precision precision) {
        Gpt model = new Gpt(cfg, 0);
        model.setActivationCheckpointing(checkpointing);
        FlatParameters flat = FlatParameters.of(model);
        FlatOptimizer opt = new FlatOptimizer(flat, AdamW.gpt());
        Rng rng = new Rng(0);
        int t = cfg.blockSize(), n = batch * t;
        int[] x = new int[n], y = new int[n];
        for (int i = 0; i < n; i++) {
            x[i] = rng.nextInt(cfg.vocabSize());
            y[i] = rng.nextInt(cfg.vocabSize());
        }
        double[] ms = new double[steps];
        StepArena arena = new StepArena();
        long activations = 0, workingSet = 0;
        for (int i = 0; i < warmup + steps; i++) {
            long t0 = System.nanoTime();
            flat.zeroGrad();
            SavedMemory.resetPeak();
            long base = SavedMemory.liveBytes();
            try (var scope = arena.open(); var cast = Autocast.with(precision)) {
                model.loss(x, y, batch, t).backward();
            }
            activations = Math.max(activations, SavedMemory.peakBytes() - base);
            workingSet = Math.max(workingSet, arena.peakLentBytes());
            opt.step(3e-4f, GradClip.coefficient(GradClip.globalNorm(flat.grad()), 1f)); // as the strategies step
            if (i >= warmup) ms[i - warmup] = (System.nanoTime() - t0) / 1e6;
            arena.settle(); // as the trainer does, outside the timed step
        }
        double mean = Arrays.stream(ms).average().orElse(0);
        Arrays.sort(ms);
        double median = ms[steps / 2];
        double tokPerSec = n / (median / 1e3);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("precision", precision.label());
        r.put("activationCheckpointing", checkpointing);
        r.put("stepMs", median);
        r.put("meanStepMs", mean); // includes the garbage-collection pauses the median hides
        r.put("tokensPerSecond", tokPerSec);
        r.put("mfu", model.flopsPerToken(t) * tokPerSec / peak);
        r.put("peakGflops", peak / 1e9);
        r.put("activationBytes", activations);
        r.put("workingSetBytes", workingSet); // every array the step's arena had out at once: activations, gradients, scratch
        r.put("parameters", model.parameterCount());
        return r;
    }
}
