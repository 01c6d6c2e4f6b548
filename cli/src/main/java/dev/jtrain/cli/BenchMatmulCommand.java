package dev.jtrain.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.jtrain.tensor.kernel.MatmulBenchmark;
import dev.jtrain.tensor.kernel.Bf16Gemm;
import dev.jtrain.tensor.kernel.Sgemm;
import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Precision;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code jtrain bench matmul}: GEMM GFLOP/s of the jtrain kernels (C = A * B, row-major, fp32 or bf16 compute),
 * verified against the scalar reference before timing. Compare with {@code bench/sgemm_vs_openblas.sh} and
 * {@code bench/bf16_vs_pytorch.sh}, which run it beside the peers in one go.
 */
@Command(name = "matmul", mixinStandardHelpOptions = true,
        description = "Time a matmul (C = A*B, fp32 or bf16 compute) after checking it against the reference.")
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

    @Option(names = "--dtype", description = "fp32 (SGEMM) or bf16 (operands rounded to bf16, fp32 accumulation; "
            + "AMX tiles or the bf16 dot product where the CPU has them) (default: ${DEFAULT-VALUE}).", defaultValue = "fp32")
    String dtype;

    @Option(names = "--inputs", description = "With --dtype bf16: operands held in fp32 and rounded as they are packed "
            + "(what training multiplies), or held in bf16 as a torch.bfloat16 tensor holds them (default: ${DEFAULT-VALUE}).",
            defaultValue = "fp32")
    String inputs;

    @Option(names = "--json", description = "Print a JSON array of results instead of a table.")
    boolean json;

    @Override
    public Integer call() throws JsonProcessingException {
        List<Integer> ts = threads == null || threads.isEmpty() ? List.of(Parallel.threads()) : threads;
        Precision precision = Precision.parse(dtype);
        boolean bf16Inputs = Precision.parse(inputs) == Precision.BF16;
        if (bf16Inputs && precision != Precision.BF16) throw new IllegalArgumentException("--inputs bf16 needs --dtype bf16");
        if (bf16Inputs && sweep) throw new IllegalArgumentException("--inputs bf16 times one shape; drop --sweep");
        spec.commandLine().getErr().println("jtrain: " + (precision == Precision.BF16 ? Bf16Gemm.backend() : Sgemm.backend()));
        List<MatmulBenchmark.Result> results = new ArrayList<>();
        for (int t : ts) {
            if (t < 1) throw new IllegalArgumentException("--threads must be >= 1, got " + t);
            if (sweep) results.addAll(MatmulBenchmark.sweep(t, precision));
            else results.add(MatmulBenchmark.run(m, n, k, t, precision, bf16Inputs));
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
