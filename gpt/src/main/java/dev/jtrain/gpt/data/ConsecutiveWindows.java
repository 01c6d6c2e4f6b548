package dev.jtrain.gpt.data;

/**
 * Non-overlapping evaluation windows from the start of the data: window b has inputs
 * {@code tokens[b*T, b*T+T)} and targets {@code tokens[b*T+1, b*T+T+1)}. This is the layout
 * {@code jtrain eval} uses for parity checks, so PyTorch can be fed the exact same windows with
 * {@code data[b*T : b*T+T]} / {@code data[b*T+1 : b*T+T+1]}.
 *
 * <p>Threading: immutable; safe to share.
 */
public final class ConsecutiveWindows {
    private final Tokens tokens;
    private final int blockSize;

    public ConsecutiveWindows(Tokens tokens, int blockSize) {
        if (blockSize < 1) throw new IllegalArgumentException("blockSize must be positive: blockSize=" + blockSize);
        this.tokens = tokens;
        this.blockSize = blockSize;
    }

    /** Number of whole windows the data holds: floor((N - 1) / T). */
    public long count() {
        return Math.max(0, (tokens.size() - 1) / blockSize);
    }

    /** The first {@code rows} windows. */
    public Batch first(int rows) {
        return windows(0, rows);
    }

    /**
     * Windows {@code [firstWindow, firstWindow + rows)} as one batch.
     *
     * @throws IllegalArgumentException if the data is too short (it needs (firstWindow+rows)*T + 1 tokens)
     */
    public Batch windows(long firstWindow, int rows) {
        if (rows < 1 || firstWindow < 0)
            throw new IllegalArgumentException("invalid window range: firstWindow=" + firstWindow + ", rows=" + rows);
        long need = (firstWindow + rows) * blockSize + 1;
        if (tokens.size() < need)
            throw new IllegalArgumentException("data too short for " + rows + " windows of blockSize=" + blockSize
                    + " starting at window " + firstWindow + ": need " + need + " tokens, have " + tokens.size()
                    + " (" + count() + " whole windows); use a smaller --batch/--block or more data");
        int t = blockSize;
        int[] x = new int[rows * t];
        int[] y = new int[rows * t];
        int[] window = new int[t + 1];
        for (int b = 0; b < rows; b++) {
            tokens.read((firstWindow + b) * t, window, 0, t + 1);
            System.arraycopy(window, 0, x, b * t, t);
            System.arraycopy(window, 1, y, b * t, t);
        }
        return new Batch(x, y, rows, t);
    }

    public int blockSize() {
        return blockSize;
    }
}
