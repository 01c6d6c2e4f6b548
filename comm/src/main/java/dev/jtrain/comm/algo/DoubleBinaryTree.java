package dev.jtrain.comm.algo;

/**
 * The two complementary binary trees of NCCL's double binary tree (Sanders, Speck, Träff 2009, "Two-tree
 * algorithms for full bandwidth broadcast, reduction and scan"). Tree A is an in-order tree over ranks: a rank
 * with lowest set bit b has children r ± b/2 and its parent one level up; rank 0 is the root with the single child
 * highestOneBit(p-1). In tree A odd ranks are leaves. Tree B is tree A on relabelled ranks — mirrored (r → p-1-r)
 * when p is even, shifted by one (r → r+1) when p is odd; both flip parity, so the leaves of A are the interior of B
 * and (but for at most one rank where the shift wraps) every rank is interior in at most one tree.
 *
 * <p>Iterative (no recursion); {@code -1} means "none".
 */
public final class DoubleBinaryTree {
    private DoubleBinaryTree() {}

    /** {parent, child0, child1} of {@code rank} in tree {@code tree} (0 = A, 1 = B), as ranks. */
    public static int[] node(int tree, int rank, int p) {
        int idx = tree == 0 ? rank : toB(rank, p);
        int[] n = indexNode(idx, p);
        if (tree == 1) for (int i = 0; i < 3; i++) if (n[i] >= 0) n[i] = fromB(n[i], p);
        return n;
    }

    private static int toB(int r, int p) { return p % 2 == 0 ? p - 1 - r : (r + 1) % p; }

    private static int fromB(int i, int p) { return p % 2 == 0 ? p - 1 - i : (i - 1 + p) % p; }

    private static int[] indexNode(int idx, int p) {
        if (idx == 0) return new int[] {-1, p > 1 ? Integer.highestOneBit(p - 1) : -1, -1};
        int b = idx & -idx;
        int up = (idx ^ b) | (b << 1);
        if (up >= p) up = idx ^ b;
        int low = b >> 1;
        int c0 = low == 0 ? -1 : idx - low;
        int lb = low;
        while (lb > 0 && idx + lb >= p) lb >>= 1;
        int c1 = lb == 0 ? -1 : idx + lb;
        return new int[] {up, c0, c1};
    }
}
