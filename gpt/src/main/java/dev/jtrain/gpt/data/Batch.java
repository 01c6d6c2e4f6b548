package dev.jtrain.gpt.data;

import java.util.Arrays;

/**
 * A batch of token windows, row-major: row b of the inputs is {@code x[b*T, b*T+T)} and its targets,
 * the same window shifted one token ahead, are {@code y[b*T, b*T+T)}.
 *
 * @param x         inputs, (rows, blockSize)
 * @param y         targets, (rows, blockSize)
 * @param rows      number of windows B (local rows when sharded)
 * @param blockSize window length T
 */
public record Batch(int[] x, int[] y, int rows, int blockSize) {
    public Batch {
        if (x.length != (long) rows * blockSize || y.length != x.length)
            throw new IllegalArgumentException("batch arrays do not match rows x blockSize: rows=" + rows
                    + ", blockSize=" + blockSize + ", x.length=" + x.length + ", y.length=" + y.length);
    }

    /** Rows {@code [from, from + count)}. */
    public Batch rows(int from, int count) {
        if (from < 0 || count < 1 || from + count > rows)
            throw new IllegalArgumentException("rows [" + from + ", " + (from + count) + ") of a batch of " + rows);
        return new Batch(Arrays.copyOfRange(x, from * blockSize, (from + count) * blockSize),
                Arrays.copyOfRange(y, from * blockSize, (from + count) * blockSize), count, blockSize);
    }

    /** Number of (input, target) token pairs. */
    public int tokens() {
        return x.length;
    }
}
