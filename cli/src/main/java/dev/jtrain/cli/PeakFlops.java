package dev.jtrain.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.jtrain.tensor.kernel.MatmulBenchmark;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.IntToDoubleFunction;

/**
 * The denominator of MFU when the user gives none: this machine's matmul throughput at 1024³ on the kernel threads in
 * the run's precision (what `jtrain bench matmul --dtype fp32|bf16` reports), so a bf16 run's MFU is against the
 * measured bf16 peak. A measurement taken while other work shares the cores would understate the
 * peak (and overstate MFU, even past 100%), so the best of three runs is kept per thread count in
 * {@code ~/.cache/jtrain/peak-gflops.json}, and re-measured after a run that beat it (see
 * {@link #remeasureAfterBeaten}); it is only ever raised.
 */
final class PeakFlops {
    private PeakFlops() {}

    static double measure(Precision precision) {
        return measure(cacheFile(), key(precision), Parallel.threads(), t -> bestOfThree(t, precision));
    }

    /** fp32 keeps the cache's original keys ({@code threads-N}); other precisions are prefixed ({@code bf16-threads-N}). */
    static String key(Precision precision) {
        return precision == Precision.FP32 ? "" : precision.label() + "-";
    }

    /** @param gflopsOf measures the peak at a thread count (the best of three SGEMM runs; replaced in tests) */
    static double measure(Path cache, int threads, IntToDoubleFunction gflopsOf) {
        return measure(cache, "", threads, gflopsOf);
    }

    static double measure(Path cache, String prefix, int threads, IntToDoubleFunction gflopsOf) {
        ObjectNode root = load(cache);
        double cached = root.path(prefix + key(threads)).asDouble(0);
        if (cached > 0) return cached * 1e9;
        double best = gflopsOf.applyAsDouble(threads);
        store(cache, root, prefix + key(threads), best);
        return best * 1e9;
    }

    /**
     * A run whose model FLOP/s beat the peak proves the cached peak wrong (it was measured while the cores were
     * busy, and a cached figure is not re-measured on its own): measures again now that training is over and caches
     * the new figure if it is higher. Returns the new measurement, in FLOP/s.
     */
    static double remeasureAfterBeaten(double cachedPeakFlops, Precision precision) {
        return remeasureAfterBeaten(cachedPeakFlops, cacheFile(), key(precision), Parallel.threads(), t -> bestOfThree(t, precision));
    }

    static double remeasureAfterBeaten(double cachedPeakFlops, Path cache, int threads, IntToDoubleFunction gflopsOf) {
        return remeasureAfterBeaten(cachedPeakFlops, cache, "", threads, gflopsOf);
    }

    static double remeasureAfterBeaten(double cachedPeakFlops, Path cache, String prefix, int threads, IntToDoubleFunction gflopsOf) {
        double fresh = gflopsOf.applyAsDouble(threads) * 1e9;
        if (fresh > cachedPeakFlops) store(cache, load(cache), prefix + key(threads), fresh / 1e9);
        return fresh;
    }

    private static String key(int threads) { return "threads-" + threads; }

    private static double bestOfThree(int threads, Precision precision) {
        double best = 0;
        for (int i = 0; i < 3; i++) best = Math.max(best, MatmulBenchmark.run(1024, 1024, 1024, threads, precision).gflops());
        return best;
    }

    private static ObjectNode load(Path cache) {
        ObjectMapper json = new ObjectMapper();
        try {
            if (Files.isRegularFile(cache)) return (ObjectNode) json.readTree(cache.toFile());
        } catch (IOException | ClassCastException e) {
            // a damaged cache is re-measured, never fatal
        }
        return json.createObjectNode();
    }

    private static void store(Path cache, ObjectNode root, String key, double gflops) {
        root.put(key, gflops);
        try {
            Files.createDirectories(cache.getParent());
            new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(cache.toFile(), root);
        } catch (IOException e) {
            System.err.println("jtrain: could not cache peak FLOP/s in " + cache + ": " + e.getMessage());
        }
    }

    static Path cacheFile() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("jtrain").resolve("peak-gflops.json");
    }
}
