package dev.jtrain.parallel;

import dev.jtrain.comm.algo.PairwiseOrder;

import java.util.Arrays;

/**
 * A rank that runs the rows of m ranks as m pieces (a job that continues on fewer ranks) keeps each piece's gradient
 * apart and sums them in {@link PairwiseOrder}'s tree, so that its sum is the one m ranks would have reached in an
 * {@link dev.jtrain.comm.algo.OrderedAllReduce}: accumulating them into one buffer would sum them left to right.
 * Pieces 0..m-2 are parked here when the next piece begins; the last one is accumulating in the gradient buffer
 * itself, and {@link #combine} folds the parked ones in, a range at a time (a bucket, as its collective launches).
 *
 * <p>Memory: m-1 gradient-sized buffers, allocated on first use. Threading: the training thread.
 */
final class PieceSums {
    private final int size;
    private float[][] parked = new float[0][];
    private int pieces = 1, begun;
    private int[] order = PairwiseOrder.plan(1);

    PieceSums(int size) { this.size = size; }

    /** Piece {@code piece} of {@code of} begins: the gradient buffer holds piece-1's sum, which is parked and cleared. */
    void begin(int piece, int of, float[] grad) {
        if (of < 1 || piece < 0 || piece >= of) throw new IllegalArgumentException("piece " + piece + " of " + of);
        if (piece == 0) {
            if (of != pieces) {
                pieces = of;
                order = PairwiseOrder.plan(of);
                if (parked.length < of - 1) parked = Arrays.copyOf(parked, of - 1);
            }
        } else {
            if (piece != begun + 1 || of != pieces)
                throw new IllegalStateException("pieces must begin in order: piece " + piece + " of " + of + " after " + begun + " of " + pieces);
            if (parked[piece - 1] == null) parked[piece - 1] = new float[size];
            System.arraycopy(grad, 0, parked[piece - 1], 0, size);
            Arrays.fill(grad, 0f);
        }
        begun = piece;
    }

    /** Whether the current step runs in more than one piece. */
    boolean active() { return pieces > 1; }

    /** {@code grad[lo, lo+len)} becomes the sum of all pieces' gradients there, in the fixed order. */
    void combine(float[] grad, int lo, int len) {
        if (pieces == 1) return;
        if (begun != pieces - 1)
            throw new IllegalStateException("gradients combined after piece " + begun + " of " + pieces + ": every piece must run first");
        // operand i is piece i; the last one is still in grad. The plan writes only into the left operand of a pair,
        // never into the last one, so the sums go into the parked buffers (the next step overwrites them anyway).
        for (int k = 0; k < order.length; k += 2) {
            float[] into = parked[order[k]];
            float[] from = order[k + 1] == pieces - 1 ? grad : parked[order[k + 1]];
            for (int i = lo; i < lo + len; i++) into[i] += from[i];
        }
        System.arraycopy(parked[0], lo, grad, lo, len);
    }
}
