package dev.jtrain.tensor.kernel;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Times {@link Sgemm#sgemm}, or {@link Bf16Gemm#gemm} for bf16 (C = A * B, row-major, no transposes, beta = 0), the way the peers are timed in
 * {@code bench/sgemm_vs_openblas.sh}: warm-up, then the median of repeated calls. Before timing it checks
 * the result against a double-precision dot product (every entry for small sizes, a random sample for large
 * ones) and refuses to report a figure for a wrong kernel, as OpenJDK's VectorDotBenchmark does.
 *
 * <p>Plain Java (no JMH) so the CLI ({@code jtrain bench matmul}) can call it. Threading: changes the global
 * {@link Parallel} thread count for the duration of a run and restores it afterwards; do not run it while
 * other work uses the kernels.
 */
public final class MatmulBenchmark {
    /** One measurement: {@code gflops = 2 m n k / medianMs}. */
    public record Result(int m, int n, int k, int threads, String dtype, String inputs, double gflops, double medianMs) {}

    /**
     * Minimum wall time of warm-up. Until C2 has compiled them, Vector API kernels run as interpreted or C1 code
     * that allocates every vector, far slower than compiled, and the packed kernel reaches C2 only after many loop
     * iterations, which small sizes take long to run up (bench/MEASUREMENTS.md, "warm-up of benchmarks").
     */
    private static final long WARMUP_NANOS = 1_500_000_000L;
    /** Minimum wall time of the measured repeats. */
    private static final long MEASURE_NANOS = 1_000_000_000L;
    private static final int MIN_REPEATS = 5;
    private static final int MAX_REPEATS = 200;
    /** Entries compared against the reference when m * n is larger than this. */
    private static final int SAMPLED_ENTRIES = 512;

    private MatmulBenchmark() {}

    /** Verifies, then times the product (m, n, k) in {@code precision} on {@code threads} threads, operands in fp32. */
    public static Result run(int m, int n, int k, int threads, Precision precision) {
        return run(m, n, k, threads, precision, false);
    }

    /**
     * As {@link #run(int, int, int, int, Precision)}; with {@code bf16Inputs} (bf16 only) the operands are held in bf16
     * ({@link Bf16Gemm#gemm(boolean, boolean, int, int, int, float, short[], int, int, short[], int, int, float, float[],
     * int, int)}), as a {@code torch.bfloat16} tensor holds them, instead of rounded from fp32 as they are packed.
     */
    public static Result run(int m, int n, int k, int threads, Precision precision, boolean bf16Inputs) {
        if (m < 1 || n < 1 || k < 1 || threads < 1) {
            throw new IllegalArgumentException("matmul benchmark: sizes and threads must be >= 1, got m=" + m
                    + " n=" + n + " k=" + k + " threads=" + threads);
        }
        if (bf16Inputs && precision != Precision.BF16) {
            throw new IllegalArgumentException("matmul benchmark: bf16 inputs need bf16 compute, got " + precision.label());
        }
        int previous = Parallel.threads();
        Parallel.setThreads(threads);
        try {
            SplittableRandom rnd = new SplittableRandom(42);
            float[] a = randomMatrix(rnd, m * k);
            float[] b = randomMatrix(rnd, k * n);
            float[] c = new float[m * n];
            Arrays.fill(c, Float.NaN);  // beta = 0 must overwrite whatever C holds
            Runnable product;
            if (bf16Inputs) {
                short[] a16 = Bf16.toBf16(a, 0, a.length), b16 = Bf16.toBf16(b, 0, b.length);
                a = Bf16.widen(a16, 0, a16.length); // the values multiplied, for the check
                b = Bf16.widen(b16, 0, b16.length);
                product = () -> Bf16Gemm.gemm(false, false, m, n, k, 1f, a16, 0, k, b16, 0, n, 0f, c, 0, n);
            } else {
                float[] fa = a, fb = b;
                product = () -> precision.gemm(false, false, m, n, k, 1f, fa, 0, k, fb, 0, n, 0f, c, 0, n);
            }
            product.run();
            verify(m, n, k, a, b, c, rnd, precision);

            long warmEnd = System.nanoTime() + WARMUP_NANOS;
            for (int w = 0; w < 5 || System.nanoTime() < warmEnd; w++) product.run();

            long[] times = new long[MAX_REPEATS];
            int reps = 0;
            long measureEnd = System.nanoTime() + MEASURE_NANOS;
            while (reps < MIN_REPEATS || (reps < MAX_REPEATS && System.nanoTime() < measureEnd)) {
                long t0 = System.nanoTime();
                product.run();
                times[reps++] = System.nanoTime() - t0;
            }
            Arrays.sort(times, 0, reps);
            double medianNs = reps % 2 == 1 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2.0;
            return new Result(m, n, k, threads, precision.label(), bf16Inputs ? "bf16" : "fp32", 2.0 * m * n * k / medianNs,
                    medianNs / 1e6);
        } finally {
            Parallel.setThreads(previous);
        }
    }

    /**
     * Sizes around multiples of the tile sizes, to show tile quantisation: square sizes near 1024, and
     * m = 1 .. MR + 1 against 1024 x 1024 (the shapes of a decode step).
     */
    public static List<Result> sweep(int threads, Precision precision) {
        List<Result> out = new ArrayList<>();
        for (int s : new int[] {1024, 1025, 1031, 1040, 1048, 1056, 1072, 1088}) out.add(run(s, s, s, threads, precision));
        for (int m = 1; m <= SgemmKernel.MR + 1; m++) out.add(run(m, 1024, 1024, threads, precision));
        return out;
    }

    private static float[] randomMatrix(SplittableRandom rnd, int len) {
        float[] x = new float[len];
        for (int i = 0; i < len; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
        return x;
    }

    /**
     * Compares entries of C with {@link Sgemm#reference} run on the 1 x 1 sub-problem of each entry (all of
     * them for small sizes, a random sample for large ones). Tolerance |c - ref| <= bound * sum_p |a_ip b_pj|
     * + 1e-6 with {@link Precision#relativeErrorBound}: float accumulation in another order differs by a few ulps
     * per block of the magnitude sum (bf16 adds the rounding of its factors), while a wrong kernel is off by O(1).
     */
    private static void verify(int m, int n, int k, float[] a, float[] b, float[] c, SplittableRandom rnd, Precision precision) {
        boolean all = (long) m * n <= SAMPLED_ENTRIES * 8L;
        int count = all ? m * n : SAMPLED_ENTRIES;
        float[] ref = new float[1];
        for (int s = 0; s < count; s++) {
            int idx = all ? s : rnd.nextInt(m * n);
            int i = idx / n, j = idx % n;
            Sgemm.reference(false, false, 1, 1, k, 1f, a, i * k, k, b, j, n, 0f, ref, 0, 1);
            double mag = 0;
            for (int p = 0; p < k; p++) mag += Math.abs((double) a[i * k + p] * b[p * n + j]);
            double tol = precision.relativeErrorBound(k) * mag + 1e-6;
            if (!(Math.abs(c[idx] - ref[0]) <= tol)) {
                throw new IllegalStateException(String.format(Locale.ROOT,
                        precision.label() + " matmul result wrong, refusing to report timing: m=%d n=%d k=%d C[%d,%d]=%s reference=%s"
                                + " tolerance=%.3g", m, n, k, i, j, c[idx], ref[0], tol));
            }
        }
    }

    /** Formats results as an aligned text table. */
    public static String table(List<Result> results) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%6s %6s %6s %7s %5s %10s %10s %6s%n",
                "m", "n", "k", "threads", "dtype", "GFLOP/s", "median_ms", "inputs"));
        for (Result r : results) {
            sb.append(String.format(Locale.ROOT, "%6d %6d %6d %7d %5s %10.1f %10.3f %6s%n",
                    r.m(), r.n(), r.k(), r.threads(), r.dtype(), r.gflops(), r.medianMs(), r.inputs()));
        }
        return sb.toString();
    }

    /**
     * {@code MatmulBenchmark [--m M] [--n N] [--k K] [--threads T[,T2..]] [--sweep]}; sizes default to 1024,
     * threads to the pool size. Prints a table.
     */
    public static void main(String[] args) {
        int m = 1024, n = 1024, k = 1024;
        int[] threads = {Parallel.threads()};
        boolean sweep = false;
        Precision precision = Precision.FP32;
        boolean bf16Inputs = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--m" -> m = Integer.parseInt(args[++i]);
                case "--n" -> n = Integer.parseInt(args[++i]);
                case "--k" -> k = Integer.parseInt(args[++i]);
                case "--size" -> m = n = k = Integer.parseInt(args[++i]);
                case "--threads" -> threads = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
                case "--sweep" -> sweep = true;
                case "--dtype" -> precision = Precision.parse(args[++i]);
                case "--inputs" -> bf16Inputs = Precision.parse(args[++i]) == Precision.BF16;
                default -> throw new IllegalArgumentException("unknown argument '" + args[i]
                        + "'; usage: MatmulBenchmark [--m M] [--n N] [--k K] [--size S] [--threads T[,T..]] [--sweep] [--dtype fp32|bf16] [--inputs fp32|bf16]");
            }
        }
        List<Result> results = new ArrayList<>();
        for (int t : threads) {
            if (sweep) results.addAll(sweep(t, precision));
            else results.add(run(m, n, k, t, precision, bf16Inputs));
        }
        System.out.print(table(results));
    }
}
