package dev.jtrain.comm.algo;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class DoubleBinaryTreeTest {
    @Test
    void bothTreesSpanAllRanksConsistentlyAndEachRankIsInteriorInAtMostOne() {
        for (int p = 1; p <= 130; p++) {
            int[] interior = new int[p];
            for (int t = 0; t < 2; t++) {
                int roots = 0;
                for (int r = 0; r < p; r++) {
                    int[] n = DoubleBinaryTree.node(t, r, p);
                    if (n[0] < 0) roots++;
                    else assertThat(DoubleBinaryTree.node(t, n[0], p)).as("p=%d tree=%d rank=%d parent=%d", p, t, r, n[0]).contains(r);
                    for (int c = 1; c <= 2; c++) {
                        if (n[c] >= 0) assertThat(DoubleBinaryTree.node(t, n[c], p)[0]).as("p=%d tree=%d child of %d", p, t, r).isEqualTo(r);
                    }
                    if (n[1] >= 0 || n[2] >= 0) interior[r]++;
                    // every rank reaches the root, within log2(p)+1 hops (no cycles)
                    int hops = 0;
                    for (int x = r; DoubleBinaryTree.node(t, x, p)[0] >= 0; x = DoubleBinaryTree.node(t, x, p)[0]) {
                        assertThat(++hops).as("p=%d tree=%d rank=%d", p, t, r).isLessThanOrEqualTo(Algorithm.ceilLog2(p) + 1);
                    }
                }
                assertThat(roots).as("p=%d tree=%d", p, t).isEqualTo(1);
            }
            int both = 0;
            for (int r = 0; r < p; r++) if (interior[r] == 2) both++;
            assertThat(both).as("ranks interior in both trees, p=%d", p).isLessThanOrEqualTo(1);
        }
    }
}
