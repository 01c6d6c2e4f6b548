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
 * |result - exact| <= (p + 1) * u * sum_r |x_r| per element (first order; AVG divides by p after one more rounding). Results are identical on every rank.
 */
class Bf16WireAllReduceTest {
    private static final double U = Math.scalb(1.0, -8); // unit roundoff of bfloat16: 8 significand bits, half an ulp

    private static float[][] inputs(int p, int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[][] in = new float[p][n];
        for (float[] a : in) for (int i = 0; i < n; i++) a[i] = (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(-4, 2)));
        return in;
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
        float[][] out = new float[p][];
        LocalRanks.run(p, LocalRanks.options(), 20_000, g -> {
            float[] a = in[g.rank()].clone();
            g.allReduceBf16Wire(MemorySegment.ofArray(a), n, op);
            out[g.rank()] = a;
        });
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
}
