package dev.jtrain.comm.algo;

import java.util.ArrayList;
import java.util.List;

/**
 * One fixed order of summing n operands: adjacent pairs first, an odd one out carried up to the next level, until one
 * is left ({@code ((x0+x1)+(x2+x3))+x4} for n = 5). Floating-point addition is commutative but not associative, so a
 * sum is reproducible only when its tree is; this tree has a property the data-parallel trainer builds on: an aligned
 * group of 2^k operands (first index a multiple of 2^k) is a subtree. A rank that holds the sum of 2^k consecutive
 * operands, summed in this order, can stand for them, and the sum over ranks in this order is bitwise the sum over all
 * operands: the result does not depend on how many ranks share them ({@link OrderedAllReduce}).
 *
 * <p>Threading: stateless.
 */
public final class PairwiseOrder {
    private PairwiseOrder() {}

    /**
     * The tree over {@code n} operands as a sequence of in-place combines: for each pair {@code (into, from)} in turn,
     * operand {@code into} becomes {@code into (op) from}. Operand 0 holds the result at the end; each operand is
     * read as {@code from} at most once, and never written after that.
     */
    public static int[] plan(int n) {
        if (n < 1) throw new IllegalArgumentException("need at least one operand: n=" + n);
        List<Integer> level = new ArrayList<>();
        for (int i = 0; i < n; i++) level.add(i);
        int[] ops = new int[2 * (n - 1)];
        int k = 0;
        while (level.size() > 1) {
            List<Integer> up = new ArrayList<>();
            for (int i = 0; i < level.size(); i += 2) {
                if (i + 1 < level.size()) {
                    ops[k++] = level.get(i);
                    ops[k++] = level.get(i + 1);
                }
                up.add(level.get(i));
            }
            level = up;
        }
        return ops;
    }

    /** Whether a rank holding {@code perRank} consecutive operands can stand for them in this order: a power of two. */
    public static boolean groupsAreSubtrees(int perRank) { return perRank > 0 && Integer.bitCount(perRank) == 1; }
}
