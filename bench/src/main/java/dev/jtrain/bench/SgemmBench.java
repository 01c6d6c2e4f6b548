package dev.jtrain.bench;

import dev.jtrain.tensor.kernel.Parallel;
import dev.jtrain.tensor.kernel.Sgemm;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH timing of {@link Sgemm#sgemm} (row-major C = op(A) op(B), beta = 0) per call; GFLOP/s = 2 m n k / time.
 * {@link #setUp} checks sampled entries against {@link Sgemm#reference} and refuses to run a wrong kernel (the
 * habit of OpenJDK's VectorDotBenchmark).
 *
 * <p>Run: {@code java --add-modules jdk.incubator.vector -cp "bench/target/classes:bench/target/lib/*"
 * org.openjdk.jmh.Main SgemmBench -p size=1024 -p threads=1}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class SgemmBench {
    @Param({"256", "1024", "2048"})
    int size;

    @Param({"1", "2"})
    int threads;

    /** "nn", "tn", "nt": which operand is stored transposed (the shapes of forward, dW and dX). */
    @Param({"nn"})
    String layout;

    float[] a;
    float[] b;
    float[] c;
    boolean transA;
    boolean transB;

    @Setup(Level.Trial)
    public void setUp() {
        Parallel.setThreads(threads);
        transA = layout.charAt(0) == 't';
        transB = layout.charAt(1) == 't';
        SplittableRandom rnd = new SplittableRandom(7);
        int n = size;
        a = new float[n * n];
        b = new float[n * n];
        c = new float[n * n];
        for (int i = 0; i < a.length; i++) a[i] = (float) (rnd.nextDouble() - 0.5);
        for (int i = 0; i < b.length; i++) b[i] = (float) (rnd.nextDouble() - 0.5);
        run();
        float[] ref = new float[1];
        for (int s = 0; s < 256; s++) {
            int i = rnd.nextInt(n), j = rnd.nextInt(n);
            // Sgemm.reference on the 1 x 1 sub-problem of entry (i, j): row i of op(A) times column j of op(B)
            Sgemm.reference(transA, transB, 1, 1, n, 1f, a, transA ? i : i * n, n, b, transB ? j * n : j, n,
                    0f, ref, 0, 1);
            double mag = 0;
            for (int p = 0; p < n; p++) {
                float av = transA ? a[p * n + i] : a[i * n + p], bv = transB ? b[j * n + p] : b[p * n + j];
                mag += Math.abs((double) av * bv);
            }
            if (!(Math.abs(c[i * n + j] - ref[0]) <= 1e-5 * mag + 1e-6)) {
                throw new IllegalStateException("SgemmBench: sgemm wrong before timing, size=" + n + " layout="
                        + layout + " C[" + i + "," + j + "]=" + c[i * n + j] + " reference=" + ref[0]);
            }
        }
    }

    @Benchmark
    public float[] run() {
        int n = size;
        Sgemm.sgemm(transA, transB, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
        return c;
    }
}
