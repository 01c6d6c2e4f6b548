package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Softmax cross-entropy fused over rows of logits (N, V): loss_r = logsumexp(z_r) - z_r[t_r]. The forward keeps
 * only logsumexp per row; backward recomputes softmax from it (dz = (softmax(z) - onehot(t)) · g), which avoids
 * storing an N×V probability matrix (llm.c's fused classifier idea). Targets &lt; 0 are ignored.
 *
 * <p>Only the first {@code valid} columns take part: a vocabulary padded to a multiple of 64 for the GEMM keeps its
 * padding columns out of the softmax (as llm.c does with V vs Vp), so a padded model matches an unpadded one exactly.
 */
public final class CrossEntropyKernel {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private CrossEntropyKernel() {}

    /** Fills lse[r] and loss[r] (0 for ignored rows). */
    public static void forward(float[] z, int zo, int[] targets, int rows, int cols, int valid, float[] lse, float[] loss) {
        Parallel.forRange(rows, Math.max(1, 16384 / cols), (lo, hi) -> {
            for (int r = lo; r < hi; r++) {
                int base = zo + r * cols;
                int c = 0, upper = S.loopBound(valid);
                FloatVector vmax = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
                for (; c < upper; c += S.length()) vmax = vmax.max(FloatVector.fromArray(S, z, base + c));
                float max = vmax.reduceLanes(VectorOperators.MAX);
                for (; c < valid; c++) max = Math.max(max, z[base + c]);
                FloatVector vm = FloatVector.broadcast(S, max), acc = FloatVector.zero(S);
                for (c = 0; c < upper; c += S.length())
                    acc = acc.add(VectorMath.exp(FloatVector.fromArray(S, z, base + c).sub(vm)));
                double sum = VectorMath.sum(acc);
                for (; c < valid; c++) sum += VectorMath.exp(z[base + c] - max);
                float l = (float) (max + Math.log(sum));
                lse[r] = l;
                int t = targets[r];
                if (t >= valid) throw new IllegalArgumentException("target " + t + " out of range for " + valid + " classes (row " + r + ")");
                loss[r] = t < 0 ? 0f : l - z[base + t];
            }
        });
    }

    /** dz[r, :] = (exp(z - lse) - onehot(t)) · scale[r]; rows with t &lt; 0 get zeros. */
    public static void backward(float[] z, int zo, int[] targets, float[] lse, float scale, int rows, int cols, int valid,
                                float[] dz, int dzo) {
        backwardRows(z, zo, targets, lse, scale, 0, rows, cols, valid, dz, dzo);
    }

    /** {@link #backward} for rows [r0, r1) only, row r written at {@code dz[dzo + (r - r0) * cols]}. */
    public static void backwardRows(float[] z, int zo, int[] targets, float[] lse, float scale, int r0, int r1, int cols,
                                    int valid, float[] dz, int dzo) {
        Parallel.forRange(r1 - r0, Math.max(1, 16384 / cols), (lo, hi) -> {
            for (int r = r0 + lo; r < r0 + hi; r++) {
                int base = zo + r * cols, db = dzo + (r - r0) * cols;
                int t = targets[r];
                if (t < 0) {
                    Arrays.fill(dz, db, db + cols, 0f);
                    continue;
                }
                FloatVector vl = FloatVector.broadcast(S, lse[r]);
                int c = 0, upper = S.loopBound(valid);
                for (; c < upper; c += S.length())
                    VectorMath.exp(FloatVector.fromArray(S, z, base + c).sub(vl)).mul(scale).intoArray(dz, db + c);
                for (; c < valid; c++) dz[db + c] = VectorMath.exp(z[base + c] - lse[r]) * scale;
                Arrays.fill(dz, db + valid, db + cols, 0f);
                dz[db + t] -= scale;
            }
        });
    }
}
