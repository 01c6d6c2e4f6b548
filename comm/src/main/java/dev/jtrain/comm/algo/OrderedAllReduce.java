package dev.jtrain.comm.algo;

import java.lang.foreign.MemorySegment;

import static dev.jtrain.comm.algo.CollectiveContext.blockLength;
import static dev.jtrain.comm.algo.CollectiveContext.blockStart;

/**
 * An all-reduce whose every element is summed over the ranks in one fixed tree ({@link PairwiseOrder}), whatever the
 * group's size or layout: the reproducible reduction that lets a job continue on fewer ranks and stay bitwise equal
 * to the run that lost nothing (each remaining rank first sums, in the same order, the gradients of the ranks it
 * stands for). Ring, halving-doubling and hierarchical schemes sum in an order that depends on the world size and on
 * where a block's ring starts, so none of them can promise that.
 *
 * <p>Reduce-scatter by direct exchange: in step s (1..p-1) rank r sends block r+s to its owner and receives its own
 * block from rank r-s; the owner then combines the p contributions in the fixed order. All-gather by direct exchange
 * the same way. Vectors longer than p chunks go through in segments of p chunks (bounded scratch of p chunks).
 *
 * <p>Cost: {@code 2(p-1)α·segments + 2((p-1)/p)nβ + ((p-1)/p)nγ} — a ring's bytes and arithmetic, with p-1
 * messages per phase where a ring also has p-1; between hosts it moves more than a hierarchical scheme, so it is
 * never picked by cost: it is asked for by name ({@code JTRAIN_ALGO=allreduce:ordered}, or the trainer's
 * {@code --grad-reduce ordered}).
 */
public final class OrderedAllReduce implements AllReduceAlgorithm {
    public static final OrderedAllReduce INSTANCE = new OrderedAllReduce();

    @Override public String name() { return "ordered"; }

    @Override public boolean chosenByCost() { return false; }

    @Override
    public double predictSeconds(CostModel m, int p, long n) {
        if (p == 1) return 0;
        return 2 * (p - 1) * m.message(n / (double) p) + ((p - 1.0) / p) * n * m.gammaSecondsPerByte();
    }

    @Override
    public void allReduce(CollectiveContext c, MemorySegment buf, long count) {
        int p = c.size();
        if (p == 1 || count == 0) return;
        int[] order = PairwiseOrder.plan(p);
        long segment = c.chunkElems() * p;
        for (long off = 0; off < count; off += segment) {
            long n = Math.min(segment, count - off);
            MemorySegment part = c.elems(buf, off, n);
            reduceOwnBlock(c, part, n, order);
            gatherBlocks(c, part, n);
        }
    }

    /** Block r of {@code part} becomes the sum, in the fixed order, of block r of every rank's {@code part}. */
    private static void reduceOwnBlock(CollectiveContext c, MemorySegment part, long n, int[] order) {
        int p = c.size(), r = c.rank();
        long mine = blockLength(n, p, r), slot = (n + p - 1) / p * c.elemSize();
        MemorySegment scratch = c.scratch(0, p * slot);
        MemorySegment[] operand = new MemorySegment[p];
        for (int s = 1; s < p; s++) {
            int to = (r + s) % p, from = (r - s + p) % p;
            operand[from] = scratch.asSlice(from * slot, mine * c.elemSize());
            c.sendRecv(to, c.elems(part, blockStart(n, p, to), blockLength(n, p, to)), from, operand[from]);
        }
        MemorySegment own = c.elems(part, blockStart(n, p, r), mine);
        operand[r] = own;
        for (int i = 0; i < order.length; i += 2) c.reduce(operand[order[i]], operand[order[i]], operand[order[i + 1]], mine);
        if (operand[0] != own) MemorySegment.copy(operand[0], 0, own, 0, own.byteSize());
    }

    private static void gatherBlocks(CollectiveContext c, MemorySegment part, long n) {
        int p = c.size(), r = c.rank();
        MemorySegment own = c.elems(part, blockStart(n, p, r), blockLength(n, p, r));
        for (int s = 1; s < p; s++) {
            int to = (r + s) % p, from = (r - s + p) % p;
            c.sendRecv(to, own, from, c.elems(part, blockStart(n, p, from), blockLength(n, p, from)));
        }
    }
}
