package dev.jtrain.comm.algo;

/**
 * The standard fold of a group whose size p is not a power of two onto p' = 2^⌊log2 p⌋ "core" ranks (Thakur,
 * Rabenseifner &amp; Gropp 2005): with rem = p − p', each even rank below 2·rem hands its data to the odd rank above
 * it and sits out the power-of-two phase, which the core ranks run among themselves; the result is handed back at
 * the end. Costs two extra messages of the whole vector. Used by every recursive-halving/doubling algorithm.
 *
 * @param p   group size
 * @param q   core size p', the largest power of two not above p
 * @param rem p − p', the ranks folded away
 */
record Fold(int p, int q, int rem) {
    static Fold of(int p) {
        int q = Algorithm.floorPow2(p);
        return new Fold(p, q, p - q);
    }

    /** Whether group rank {@code r} takes part in the fold exchange (it or its partner sits out). */
    boolean folds(int r) { return r < 2 * rem; }

    /** Whether group rank {@code r} hands its data to {@code r + 1} and sits out the power-of-two phase. */
    boolean sitsOut(int r) { return r < 2 * rem && r % 2 == 0; }

    /** Core rank of a group rank that takes part (odd ranks below 2·rem, and every rank from 2·rem). */
    int coreRank(int r) { return r < 2 * rem ? r / 2 : r - rem; }

    /** Group rank of core rank {@code k}. */
    int groupRank(int k) { return k < rem ? 2 * k + 1 : k + rem; }

    /** First group rank (= block index) that core rank {@code k} stands for: it holds its partner's block too. */
    long firstBlock(int k) { return k < rem ? 2L * k : (long) k + rem; }
}
