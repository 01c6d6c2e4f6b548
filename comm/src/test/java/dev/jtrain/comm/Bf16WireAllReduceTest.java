package dev.jtrain.comm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class Bf16WireAllReduceTest {
    @Test
    @Timeout(30)
    void bf16WireAllReduceIsCloseToFloatAndIdenticalOnEveryRank() throws Exception {
        long seed = System.nanoTime();
        System.out.println("Bf16WireAllReduceTest seed=" + seed);
        int p = 3, n = 10_001;
        float[][] inputs = new float[p][n];
        SplittableRandom rnd = new SplittableRandom(seed);
        for (float[] in : inputs) for (int i = 0; i < n; i++) in[i] = (float) (rnd.nextGaussian() * 0.01);
        float[][] results = new float[p][];
        LocalRanks.run(p, LocalRanks.options(), 10_000, g -> {
            float[] a = inputs[g.rank()].clone();
            g.allReduceBf16Wire(MemorySegment.ofArray(a), n, ReduceOp.AVG);
            results[g.rank()] = a;
        });
        for (int i = 0; i < n; i++) {
            double exact = 0;
            for (float[] in : inputs) exact += in[i];
            exact /= p;
            // each bf16 rounding has relative error <= 2^-8; a few roundings plus input rounding
            assertThat((double) results[0][i]).as("element %d, seed %d", i, seed).isCloseTo(exact, org.assertj.core.data.Offset.offset(1e-3));
            assertThat(results[1][i]).isEqualTo(results[0][i]);
            assertThat(results[2][i]).isEqualTo(results[0][i]);
        }
    }
}
