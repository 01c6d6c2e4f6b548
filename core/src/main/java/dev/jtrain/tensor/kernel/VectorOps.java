package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Contiguous elementwise and reduction kernels over float arrays, with the Vector API. Each has a scalar
 * twin in {@link ScalarOps} that tests compare against. Large inputs are split across {@link Parallel}.
 */
public final class VectorOps {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    /** Below this many elements a parallel region costs more than it saves (~10 µs of work). */
    static final int GRAIN = 1 << 15;

    private VectorOps() {}

    /** out[i] = a[i] + b[i]. */
    public static void add(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
        Parallel.forRange(n, GRAIN, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length())
                FloatVector.fromArray(S, a, ao + i).add(FloatVector.fromArray(S, b, bo + i)).intoArray(out, oo + i);
            for (; i < hi; i++) out[oo + i] = a[ao + i] + b[bo + i];
        });
    }

    /**
     * As {@link #add}, on the calling thread alone: for a communication thread, which must not queue behind the
     * training thread's kernels for the shared pool.
     */
    public static void addOnCallingThread(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
        int i = 0, upper = S.loopBound(n);
        for (; i < upper; i += S.length())
            FloatVector.fromArray(S, a, ao + i).add(FloatVector.fromArray(S, b, bo + i)).intoArray(out, oo + i);
        for (; i < n; i++) out[oo + i] = a[ao + i] + b[bo + i];
    }

    /** out[i] = a[i] * b[i]. */
    public static void mul(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
        Parallel.forRange(n, GRAIN, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length())
                FloatVector.fromArray(S, a, ao + i).mul(FloatVector.fromArray(S, b, bo + i)).intoArray(out, oo + i);
            for (; i < hi; i++) out[oo + i] = a[ao + i] * b[bo + i];
        });
    }

    /** y[i] += alpha * x[i] (BLAS saxpy). */
    public static void axpy(float alpha, float[] x, int xo, float[] y, int yo, int n) {
        Parallel.forRange(n, GRAIN, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            FloatVector va = FloatVector.broadcast(S, alpha);
            for (; i < upper; i += S.length())
                FloatVector.fromArray(S, x, xo + i).fma(va, FloatVector.fromArray(S, y, yo + i)).intoArray(y, yo + i);
            for (; i < hi; i++) y[yo + i] = Math.fma(x[xo + i], alpha, y[yo + i]); // the vector loop's bits
        });
    }

    /** out[i] = alpha * x[i]. */
    public static void scale(float alpha, float[] x, int xo, float[] out, int oo, int n) {
        Parallel.forRange(n, GRAIN, (lo, hi) -> {
            int i = lo, upper = lo + S.loopBound(hi - lo);
            for (; i < upper; i += S.length())
                FloatVector.fromArray(S, x, xo + i).mul(alpha).intoArray(out, oo + i);
            for (; i < hi; i++) out[oo + i] = alpha * x[xo + i];
        });
    }

    /** Sum of x[0..n) accumulated in double lanes' worth of float partial sums (pairwise by vector lane). */
    public static double sum(float[] x, int xo, int n) {
        int i = 0, upper = S.loopBound(n);
        FloatVector acc = FloatVector.zero(S);
        double total = 0;
        // flush lane sums to double every 4096 elements to bound fp32 rounding growth
        while (i < upper) {
            int blockEnd = Math.min(upper, i + 4096);
            for (; i < blockEnd; i += S.length()) acc = acc.add(FloatVector.fromArray(S, x, xo + i));
            total += VectorMath.sum(acc);
            acc = FloatVector.zero(S);
        }
        for (; i < n; i++) total += x[xo + i];
        return total;
    }

    /** Sum of squares of x[0..n), in double (used by global-norm gradient clipping). */
    public static double sumSquares(float[] x, int xo, int n) {
        int i = 0, upper = S.loopBound(n);
        double total = 0;
        while (i < upper) {
            int blockEnd = Math.min(upper, i + 4096);
            FloatVector acc = FloatVector.zero(S);
            for (; i < blockEnd; i += S.length()) {
                FloatVector v = FloatVector.fromArray(S, x, xo + i);
                acc = v.fma(v, acc);
            }
            total += VectorMath.sum(acc);
        }
        for (; i < n; i++) total += (double) x[xo + i] * x[xo + i];
        return total;
    }

    /** out[r*cols + c] = x[r*cols + c] + b[c]: the bias/broadcast-row add. */
    public static void addRow(float[] x, int xo, float[] b, int bo, float[] out, int oo, int rows, int cols) {
        Parallel.forRange(rows, Math.max(1, GRAIN / Math.max(1, cols)), (lo, hi) -> {
            for (int r = lo; r < hi; r++) {
                int base = r * cols, c = 0, upper = S.loopBound(cols);
                for (; c < upper; c += S.length())
                    FloatVector.fromArray(S, x, xo + base + c).add(FloatVector.fromArray(S, b, bo + c)).intoArray(out, oo + base + c);
                for (; c < cols; c++) out[oo + base + c] = x[xo + base + c] + b[bo + c];
            }
        });
    }

    /** out[c] (+)= sum over rows of x[r*cols + c]: the bias gradient. Serial over rows, vector over columns. */
    public static void sumRows(float[] x, int xo, int rows, int cols, float[] out, int oo, boolean accumulate) {
        int threads = Parallel.threads();
        if (rows * (long) cols < GRAIN || threads == 1 || cols < S.length()) {
            if (!accumulate) Arrays.fill(out, oo, oo + cols, 0f);
            for (int r = 0; r < rows; r++) addRowInto(x, xo + r * cols, out, oo, cols);
            return;
        }
        // Parallel over column blocks so no two threads write the same output element.
        int blocks = Math.max(1, cols / S.length());
        Parallel.forRange(blocks, 1, (lo, hi) -> {
            int c0 = lo * S.length();
            int c1 = hi == blocks ? cols : hi * S.length();
            if (!accumulate) Arrays.fill(out, oo + c0, oo + c1, 0f);
            for (int r = 0; r < rows; r++) {
                int base = xo + r * cols;
                int c = c0;
                for (; c + S.length() <= c1; c += S.length())
                    FloatVector.fromArray(S, x, base + c).add(FloatVector.fromArray(S, out, oo + c)).intoArray(out, oo + c);
                for (; c < c1; c++) out[oo + c] += x[base + c];
            }
        });
    }

    /** out[oo + c] += x[xo + c] for c < n. */
    static void addRowInto(float[] x, int xo, float[] out, int oo, int n) {
        int c = 0, upper = S.loopBound(n);
        for (; c < upper; c += S.length())
            FloatVector.fromArray(S, x, xo + c).add(FloatVector.fromArray(S, out, oo + c)).intoArray(out, oo + c);
        for (; c < n; c++) out[oo + c] += x[xo + c];
    }
}
