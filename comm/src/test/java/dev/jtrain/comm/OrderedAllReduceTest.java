package dev.jtrain.comm;

import dev.jtrain.comm.algo.Collective;
import dev.jtrain.comm.algo.PairwiseOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ordered all-reduce sums every element in one fixed tree, so V operands give the same bits whether V ranks hold
 * one each or W ranks hold V/W each (pre-summed in the same order), for every W that leaves a power of two per rank.
 * The data spans 12 binades with both signs, so a different order changes the bits (checked against the ring).
 */
class OrderedAllReduceTest {
    static final int N = 5003; // not a multiple of any world size here: uneven blocks

    @Test
    void theOrderIsAdjacentPairsFirstWithTheOddOneCarriedUp() {
        assertThat(tree(1)).isEqualTo("0");
        assertThat(tree(2)).isEqualTo("(0+1)");
        assertThat(tree(3)).isEqualTo("((0+1)+2)");
        assertThat(tree(5)).isEqualTo("(((0+1)+(2+3))+4)");
        assertThat(tree(7)).isEqualTo("(((0+1)+(2+3))+((4+5)+6))");
        assertThat(tree(8)).isEqualTo("(((0+1)+(2+3))+((4+5)+(6+7)))");
        assertThat(PairwiseOrder.groupsAreSubtrees(4)).isTrue();
        assertThat(PairwiseOrder.groupsAreSubtrees(3)).isFalse();
    }

    /** The plan applied to symbols. */
    static String tree(int n) {
        String[] s = new String[n];
        for (int i = 0; i < n; i++) s[i] = Integer.toString(i);
        int[] plan = PairwiseOrder.plan(n);
        for (int i = 0; i < plan.length; i += 2) s[plan[i]] = "(" + s[plan[i]] + "+" + s[plan[i + 1]] + ")";
        return s[0];
    }

    @Test
    @Timeout(120)
    void theSumOfEightOperandsIsBitwiseTheSameOn1_2_4And8Ranks() throws Exception {
        float[][] operands = operands(8);
        float[] on8 = reduce(operands, 8, "ordered");
        for (int w : new int[] {1, 2, 4})
            assertThat(reduce(operands, w, "ordered")).as("%d ranks holding %d operands each against 8 ranks", w, 8 / w).isEqualTo(on8);
        assertThat(reduce(operands, 4, "ring")).as("the ring's order differs: the data is order-sensitive").isNotEqualTo(on8);
    }

    @Test
    @Timeout(120)
    void twelveOperandsOn3_6And12RanksAgreeBitwise() throws Exception {
        float[][] operands = operands(12);
        float[] on12 = reduce(operands, 12, "ordered");
        assertThat(reduce(operands, 6, "ordered")).isEqualTo(on12);
        assertThat(reduce(operands, 3, "ordered")).isEqualTo(on12);
        assertThat(reduce(operands, 1, "ordered")).isEqualTo(on12);
    }

    static float[][] operands(int v) {
        Random rnd = new Random(42);
        float[][] x = new float[v][N];
        for (float[] row : x)
            for (int i = 0; i < N; i++) row[i] = (float) ((rnd.nextBoolean() ? 1 : -1) * Math.scalb(1 + rnd.nextDouble(), rnd.nextInt(12) - 6));
        return x;
    }

    /** {@code w} ranks, rank r pre-summing operands [r·v/w, (r+1)·v/w) in the fixed order, then all-reducing. */
    static float[] reduce(float[][] operands, int w, String algorithm) throws Exception {
        int per = operands.length / w;
        float[][] result = new float[w][];
        List<float[]> local = new ArrayList<>();
        for (int r = 0; r < w; r++) {
            float[][] mine = new float[per][];
            for (int j = 0; j < per; j++) mine[j] = operands[r * per + j].clone();
            int[] plan = PairwiseOrder.plan(per);
            for (int i = 0; i < plan.length; i += 2)
                for (int e = 0; e < N; e++) mine[plan[i]][e] += mine[plan[i + 1]][e];
            local.add(mine[0]);
        }
        LocalRanks.run(w, LocalRanks.options().withAlgorithm(Collective.ALL_REDUCE, algorithm).withChunkBytes(4096), 20_000, g -> {
            float[] buf = local.get(g.rank());
            g.allReduce(buf, 0, N, ReduceOp.SUM);
            result[g.rank()] = buf;
        });
        for (int r = 1; r < w; r++) assertThat(result[r]).as("rank %d against rank 0", r).isEqualTo(result[0]);
        return Arrays.copyOf(result[0], N);
    }
}
