package dev.jtrain.comm;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * bfloat16 on the wire (what {@code --grad-wire bf16} uses). The stated bound: every input rounds once to nearest
 * even (relative error at most u = 2^-8), and each of the p-1 partial sums of a ring rounds once more, so
 * |result - exact| <= (p + 1) * u * sum_r |x_r| per element (first order; AVG divides the expanded sum by p in float32,
 * which adds only float32's rounding). Results are identical on every rank. Rounding itself is checked exactly where
 * the answer is unique: bit for bit with 2 ranks (SUM and AVG), and among the three pairing orders with 3 ranks (SUM,
 * and AVG, whose division by 3 must not round to bfloat16), on inputs full of ties.
 */
class Bf16WireAllReduceTest {
    private static final double U = Math.scalb(1.0, -8); // unit roundoff of bfloat16: 8 significand bits, half an ulp

    private static float[][] inputs(int p, int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[][] in = new float[p][n];
        for (float[] a : in) for (int i = 0; i < n; i++) a[i] = (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(-4, 2)));
        return in;
    }

    /** Each rank all-reduces its copy of {@code in[rank]} over the bf16 wire; returns every rank's result. */
    private static float[][] allReduceOnEveryRank(float[][] in, int n, ReduceOp op) throws Exception {
        float[][] out = new float[in.length][];
        LocalRanks.run(in.length, LocalRanks.options(), 20_000, g -> {
            float[] a = in[g.rank()].clone();
            g.allReduceBf16Wire(MemorySegment.ofArray(a), n, op);
            out[g.rank()] = a;
        });
        return out;
    }

    private static void assertWithinBound(float got, float[][] in, int i, int p, ReduceOp op, long seed) {
        double exact = 0, abs = 0;
        for (float[] a : in) {
            exact += a[i];
            abs += Math.abs(a[i]);
        }
        double scale = op == ReduceOp.AVG ? p : 1;
        double bound = (p + 1) * U * abs / scale;
        assertThat(Math.abs(got - exact / scale)).as("element %d p=%d op=%s seed=%d", i, p, op, seed).isLessThanOrEqualTo(bound);
    }

    @ParameterizedTest
    @CsvSource({"2,SUM", "3,AVG", "5,SUM", "7,AVG"})
    @Timeout(60)
    void allReduceStaysWithinTheBf16BoundAndAgreesOnEveryRank(int p, ReduceOp op) throws Exception {
        long seed = System.nanoTime();
        int n = 4_099;
        float[][] in = inputs(p, n, seed);
        float[][] out = allReduceOnEveryRank(in, n, op);
        for (int i = 0; i < n; i++) {
            assertWithinBound(out[0][i], in, i, p, op, seed);
            for (int r = 1; r < p; r++) assertThat(out[r][i]).isEqualTo(out[0][i]);
        }
    }

    @ParameterizedTest
    @CsvSource({"2,AVG", "3,SUM", "4,AVG", "5,AVG"})
    @Timeout(60)
    void reduceScatterStaysWithinTheBf16Bound(int p, ReduceOp op) throws Exception {
        long seed = System.nanoTime();
        int per = 1_031;
        float[][] in = inputs(p, p * per, seed);
        float[][] out = new float[p][per];
        LocalRanks.run(p, LocalRanks.options(), 20_000, g -> {
            g.reduceScatterBf16WireAsync(MemorySegment.ofArray(in[g.rank()].clone()), MemorySegment.ofArray(out[g.rank()]), per, op).waitFor();
        });
        for (int r = 0; r < p; r++) for (int i = 0; i < per; i++) assertWithinBound(out[r][i], in, r * per + i, p, op, seed);
    }

    /** A single rank has nothing to reduce: the result is its input rounded to nearest even, exactly. */
    @Test
    void oneRankRoundsToNearestEven() throws Exception {
        float[] a = {1.00390625f, 1.01171875f, -3.0f, 1e-3f};
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even gives 1; 1 + 3*2^-8 ties between 1+2^-7 and 1+2^-6: even gives 1+2^-6
        float[] expected = {1.0f, 1.015625f, -3.0f, Float.intBitsToFloat(Float.floatToIntBits(1e-3f) + 0x8000 & 0xffff0000)};
        LocalRanks.run(1, LocalRanks.options(), 5_000, g -> g.allReduceBf16Wire(MemorySegment.ofArray(a), a.length, ReduceOp.SUM));
        assertThat(a).containsExactly(expected);
    }

    /** Round to nearest, ties to even, computed in double from the float's exact value (independent of the kernel). */
    static float rne(double x) {
        float f = (float) x; // exact for the sums of two bf16 values used below
        int bits = Float.floatToRawIntBits(f);
        int low = bits & 0xFFFF, keep = bits & 0xFFFF0000;
        boolean up = low > 0x8000 || (low == 0x8000 && (keep & 0x10000) != 0);
        return Float.intBitsToFloat(up ? keep + 0x10000 : keep);
    }

    /** Inputs that exercise ties: bf16 values plus exactly half an ulp, and random floats. */
    private static float[][] tieHeavyInputs(int p, int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[][] in = new float[p][n];
        for (float[] a : in) {
            for (int i = 0; i < n; i++) {
                float base = rne(rnd.nextGaussian() * 8);
                a[i] = switch (i % 3) {
                    case 0 -> Float.intBitsToFloat(Float.floatToRawIntBits(base) | 0x8000); // a tie
                    case 1 -> base;                                                        // already bf16
                    default -> (float) rnd.nextGaussian();
                };
            }
        }
        return in;
    }

    /**
     * Two ranks: one addition, so the only correct answer is rne(rne(x0) + rne(x1)), bit for bit (and for AVG that
     * halved, then rounded). Truncating instead of rounding, or rounding ties away from zero, changes bits here.
     */
    @ParameterizedTest
    @CsvSource({"SUM", "AVG"})
    @Timeout(60)
    void twoRanksGiveExactlyTheRoundedSum(ReduceOp op) throws Exception {
        long seed = System.nanoTime();
        int n = 3_001;
        float[][] in = tieHeavyInputs(2, n, seed);
        float[][] out = allReduceOnEveryRank(in, n, op);
        for (int i = 0; i < n; i++) {
            float sum = rne((double) rne(in[0][i]) + rne(in[1][i]));
            float want = op == ReduceOp.AVG ? rne(sum / 2.0) : sum;
            assertThat(out[0][i]).as("element %d: %s + %s (seed %d)", i, in[0][i], in[1][i], seed).isEqualTo(want);
            assertThat(out[1][i]).isEqualTo(want);
        }
    }

    /**
     * Three ranks: whatever order the algorithm adds in, each partial sum is rounded to nearest even, so the result
     * is rne(rne(a + b) + c) for one of the three ways to pair the rounded inputs; AVG is that sum divided by 3 in
     * float32 (one rounding fewer than a bfloat16 division).
     */
    @ParameterizedTest
    @CsvSource({"SUM", "AVG"})
    @Timeout(60)
    void threeRanksGiveTheRoundedSumInSomeOrder(ReduceOp op) throws Exception {
        long seed = System.nanoTime();
        int n = 3_001;
        float[][] in = tieHeavyInputs(3, n, seed);
        float[][] out = allReduceOnEveryRank(in, n, op);
        int notBf16 = 0;
        for (int i = 0; i < n; i++) {
            float x = rne(in[0][i]), y = rne(in[1][i]), z = rne(in[2][i]);
            java.util.Set<Float> orders = new java.util.HashSet<>();
            for (float sum : new float[] {rne((double) rne((double) x + y) + z), rne((double) rne((double) x + z) + y), rne((double) rne((double) y + z) + x)})
                orders.add(op == ReduceOp.AVG ? sum / 3f : sum);
            assertThat(orders).as("element %d (seed %d)", i, seed).contains(out[0][i]);
            if (rne(out[0][i]) != out[0][i]) notBf16++;
        }
        if (op == ReduceOp.AVG) assertThat(notBf16).as("averages with more than bfloat16's 8 significant bits").isPositive();
    }
}
