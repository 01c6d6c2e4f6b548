package dev.jtrain.cli;

import dev.jtrain.tensor.kernel.MatmulBenchmark;
import dev.jtrain.tensor.kernel.Parallel;

/**
 * The denominator of MFU when the user gives none: this machine's measured SGEMM throughput at 1024³ on all kernel
 * threads (what `jtrain bench matmul` reports), i.e. MFU relative to the best the matmul kernel achieves here.
 */
final class PeakFlops {
    private PeakFlops() {}

    static double measure() {
        MatmulBenchmark.Result r = MatmulBenchmark.run(1024, 1024, 1024, Parallel.threads());
        return r.gflops() * 1e9;
    }
}
