package dev.jtrain.gpt.data;

/**
 * Deterministic random training batches, as nanoGPT's {@code get_batch}: each row is a window of
 * T+1 consecutive tokens starting at a uniformly random position in {@code [0, N-T-1]}; inputs are the
 * first T, targets the last T.
 *
 * <p>The start of row r at step s is a pure function of (seed, step, r): a SplitMix64 hash, mapped to
 * the range by a 64x64-bit multiply-high (Lemire). So the global batch of a step is the same whatever the
 * world size, a resumed run sees exactly the batches it would have seen, and each rank of a
 * data-parallel job computes only its own rows ({@link #shard}) with no communication. The bias of the
 * multiply-high mapping is at most N/2^64, negligible.
 *
 * <p>Threading: immutable; safe to share.
 */
public final class BatchSampler {
    private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

    private final Tokens tokens;
    private final int batchSize;
    private final int blockSize;
    private final long seed;
    private final int firstRow;
    private final int rows;

    /**
     * @param batchSize global batch B (rows across all ranks)
     * @param blockSize window length T
     * @throws IllegalArgumentException if the data has fewer than T+1 tokens
     */
    public BatchSampler(Tokens tokens, int batchSize, int blockSize, long seed) {
        this(tokens, batchSize, blockSize, seed, 0, batchSize);
        if (batchSize < 1 || blockSize < 1)
            throw new IllegalArgumentException("batchSize and blockSize must be positive: batchSize=" + batchSize
                    + ", blockSize=" + blockSize);
        if (tokens.size() < blockSize + 1L)
            throw new IllegalArgumentException("data too short for one window: need blockSize+1=" + (blockSize + 1)
                    + " tokens, have " + tokens.size() + "; use a smaller --block or more data");
    }

    private BatchSampler(Tokens tokens, int batchSize, int blockSize, long seed, int firstRow, int rows) {
        this.tokens = tokens;
        this.batchSize = batchSize;
        this.blockSize = blockSize;
        this.seed = seed;
        this.firstRow = firstRow;
        this.rows = rows;
    }

    /**
     * This rank's rows of every global batch: rows {@code [rank*B/world, (rank+1)*B/world)}.
     *
     * @throws IllegalArgumentException if B does not divide by world (we refuse rather than give ranks unequal work)
     */
    public BatchSampler shard(int rank, int world) {
        if (world < 1 || rank < 0 || rank >= world)
            throw new IllegalArgumentException("invalid rank/world: rank=" + rank + ", world=" + world);
        if (firstRow != 0 || rows != batchSize)
            throw new IllegalStateException("sampler is already a shard: firstRow=" + firstRow + ", rows=" + rows);
        if (batchSize % world != 0)
            throw new IllegalArgumentException("global batch size must divide by world size: batchSize=" + batchSize
                    + ", world=" + world + "; choose a batch size that is a multiple of " + world);
        int local = batchSize / world;
        return new BatchSampler(tokens, batchSize, blockSize, seed, rank * local, local);
    }

    /** The batch of step {@code step}: all B rows, or this shard's rows. */
    public Batch next(long step) {
        int t = blockSize;
        int[] x = new int[rows * t];
        int[] y = new int[rows * t];
        int[] window = new int[t + 1];
        for (int i = 0; i < rows; i++) {
            long start = start(step, firstRow + i);
            tokens.read(start, window, 0, t + 1);
            System.arraycopy(window, 0, x, i * t, t);
            System.arraycopy(window, 1, y, i * t, t);
        }
        return new Batch(x, y, rows, t);
    }

    /** First token of global row {@code row} at {@code step}, in {@code [0, N-T-1]}. */
    public long start(long step, int row) {
        long positions = tokens.size() - blockSize;  // valid starts: 0 .. N-T-1
        long h = mix64(mix64(seed) ^ mix64(step + GOLDEN_GAMMA));
        h = mix64(h + (row + 1L) * GOLDEN_GAMMA);
        return Math.unsignedMultiplyHigh(h, positions);
    }

    /** SplitMix64 finalizer (Steele, Lea, Flood 2014): a bijective, well-mixed 64-bit hash. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Global batch size B. */
    public int batchSize() {
        return batchSize;
    }

    /** Rows {@link #next} returns: B, or B/world for a shard. */
    public int rows() {
        return rows;
    }

    public int blockSize() {
        return blockSize;
    }

    public long seed() {
        return seed;
    }
}
