package dev.jtrain.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.jtrain.tensor.kernel.MatmulBenchmark;
import dev.jtrain.tensor.kernel.Parallel;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The denominator of MFU when the user gives none: this machine's SGEMM throughput at 1024³ on the kernel threads
 * (what `jtrain bench matmul` reports). A measurement taken while other work shares the cores would understate the
 * peak (and overstate MFU, even past 100%), so the best of three runs is kept per thread count in
 * {@code ~/.cache/jtrain/peak-gflops.json} and only ever raised.
 */
final class PeakFlops {
    private PeakFlops() {}

    static double measure() {
        int threads = Parallel.threads();
        String key = "threads-" + threads;
        Path cache = cacheFile();
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = json.createObjectNode();
        try {
            if (Files.isRegularFile(cache)) root = (ObjectNode) json.readTree(cache.toFile());
        } catch (IOException | ClassCastException e) {
            root = json.createObjectNode(); // a damaged cache is re-measured, never fatal
        }
        double cached = root.path(key).asDouble(0);
        double best = 0;
        if (cached <= 0) {
            for (int i = 0; i < 3; i++) best = Math.max(best, MatmulBenchmark.run(1024, 1024, 1024, threads).gflops());
            root.put(key, best);
            try {
                Files.createDirectories(cache.getParent());
                json.writerWithDefaultPrettyPrinter().writeValue(cache.toFile(), root);
            } catch (IOException e) {
                System.err.println("jtrain: could not cache peak FLOP/s in " + cache + ": " + e.getMessage());
            }
        }
        return Math.max(best, cached) * 1e9;
    }

    static Path cacheFile() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("jtrain").resolve("peak-gflops.json");
    }
}
