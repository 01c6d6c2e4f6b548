package dev.jtrain.gpt.data;

/**
 * A read-only sequence of token ids, on disk ({@link TokenFile}) or in memory ({@link #of}).
 * Implementations allow concurrent reads.
 */
public interface Tokens {
    /** Number of tokens. */
    long size();

    /** Copies tokens {@code [first, first + len)} into {@code dst[off, off + len)}. */
    void read(long first, int[] dst, int off, int len);

    /** Token at {@code index}. */
    default int get(long index) {
        int[] one = new int[1];
        read(index, one, 0, 1);
        return one[0];
    }

    /** Wraps an array (no copy), for tests and small in-memory data. */
    static Tokens of(int... tokens) {
        return new Tokens() {
            @Override
            public long size() {
                return tokens.length;
            }

            @Override
            public void read(long first, int[] dst, int off, int len) {
                if (first < 0 || len < 0 || first + len > tokens.length)
                    throw new IndexOutOfBoundsException("token range out of data: first=" + first + ", len=" + len
                            + ", size=" + tokens.length);
                System.arraycopy(tokens, (int) first, dst, off, len);
            }

            @Override
            public int get(long index) {
                return tokens[Math.toIntExact(index)];
            }
        };
    }
}
