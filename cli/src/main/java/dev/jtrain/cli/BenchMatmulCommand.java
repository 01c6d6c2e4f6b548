package dev.jtrain.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.jtrain.tensor.kernel.MatmulBenchmark;
import dev.jtrain.tensor.kernel.Parallel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code jtrain bench matmul}: SGEMM GFLOP/s of the jtrain kernel (C = A * B, row-major, fp32), verified against
 * the scalar reference before timing. Compare with {@code bench/sgemm_vs_openblas.sh}, which runs this beside
 * OpenBLAS in one go.
 */
@Command(name = "matmul", mixinStandardHelpOptions = true,
        description = "Time SGEMM (C = A*B, fp32) after checking it against the reference.")
final class BenchMatmulCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--m", description = "Rows of A and C (default: ${DEFAULT-VALUE}).", defaultValue = "1024")
    int m;

    @Option(names = "--n", description = "Columns of B and C (default: ${DEFAULT-VALUE}).", defaultValue = "1024")
    int n;

    @Option(names = "--k", description = "Columns of A, rows of B (default: ${DEFAULT-VALUE}).", defaultValue = "1024")
    int k;

    @Option(names = "--threads", split = ",",
            description = "Kernel threads, one or more comma-separated (default: the pool size, JTRAIN_THREADS).")
    List<Integer> threads;

    @Option(names = "--sweep", description = "Sizes around tile multiples (1024..1088 square; m = 1..MR+1) instead.")
    boolean sweep;

    @Option(names = "--json", description = "Print a JSON array of results instead of a table.")
    boolean json;

    @Override
    public Integer call() throws JsonProcessingException {
        List<Integer> ts = threads == null || threads.isEmpty() ? List.of(Parallel.threads()) : threads;
        List<MatmulBenchmark.Result> results = new ArrayList<>();
        for (int t : ts) {
            if (t < 1) throw new IllegalArgumentException("--threads must be >= 1, got " + t);
            if (sweep) results.addAll(MatmulBenchmark.sweep(t));
            else results.add(MatmulBenchmark.run(m, n, k, t));
        }
        if (json) {
            ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
            spec.commandLine().getOut().println(mapper.writeValueAsString(results));
        } else {
            spec.commandLine().getOut().print(MatmulBenchmark.table(results));
        }
        spec.commandLine().getOut().flush();
        return 0;
    }
}
