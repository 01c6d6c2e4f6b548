package dev.jtrain.gpt.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A memory-mapped file of tokens as little-endian uint16, no header: exactly nanoGPT's
 * {@code train.bin}/{@code val.bin} ({@code np.memmap(path, dtype=np.uint16)}), so files move freely
 * between the two. Token count is file size / 2.
 *
 * <pre>
 *  offset  0      2      4             2(n-1)     2n
 *          +------+------+-- ... --+----------+
 *          | t0   | t1   |         | t(n-1)   |     each t: u16 LE, 0..65535
 *          +------+------+-- ... --+----------+
 * </pre>
 *
 * <p>uint16 limits the vocabulary to 65536 ids; GPT-2's 50257 fits, cl100k's 100k does not
 * ({@link #checkVocab} refuses it rather than wrap ids).
 *
 * <p>Threading: reads may run concurrently; {@link #close()} must not race with them.
 */
public final class TokenFile implements Tokens, AutoCloseable {
    /** Ids 0..65535. */
    public static final int MAX_VOCAB = 1 << 16;
    public static final int BYTES_PER_TOKEN = 2;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int CHUNK = 8192;

    private final Path path;
    private final Arena arena;
    private final MemorySegment data;

    private TokenFile(Path path, Arena arena, MemorySegment data) {
        this.path = path;
        this.arena = arena;
        this.data = data;
    }

    /** @throws IllegalArgumentException if a vocabulary of {@code vocabSize} ids cannot be stored as uint16 */
    public static void checkVocab(int vocabSize) {
        if (vocabSize < 1 || vocabSize > MAX_VOCAB)
            throw new IllegalArgumentException("vocabSize=" + vocabSize + " does not fit a uint16 token file (ids must be 0.."
                    + (MAX_VOCAB - 1) + "); use a tokenizer with at most " + MAX_VOCAB + " tokens");
    }

    /** Maps {@code path} read-only. */
    public static TokenFile open(Path path) {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size % BYTES_PER_TOKEN != 0)
                throw new IllegalArgumentException("token file has an odd size, not uint16 tokens: file=" + path + ", bytes=" + size);
            MemorySegment seg = size == 0 ? MemorySegment.ofArray(new byte[0]) : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return new TokenFile(path, arena, seg);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot open token file " + path + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Writes {@code tokens[off, off + len)} as a token file (for tests and small data; {@link Corpus} streams
     * with {@link TokenFileWriter}).
     */
    public static void write(Path path, int vocabSize, int[] tokens, int off, int len) {
        try (TokenFileWriter w = new TokenFileWriter(path, vocabSize)) {
            w.append(tokens, off, len);
        }
    }

    public Path path() {
        return path;
    }

    @Override
    public long size() {
        return data.byteSize() / BYTES_PER_TOKEN;
    }

    @Override
    public int get(long index) {
        return data.get(U16, index * BYTES_PER_TOKEN) & 0xffff;
    }

    @Override
    public void read(long first, int[] dst, int off, int len) {
        if (first < 0 || len < 0 || first > size() - len)
            throw new IndexOutOfBoundsException("token range out of file: first=" + first + ", len=" + len
                    + ", size=" + size() + ", file=" + path);
        short[] tmp = new short[Math.min(CHUNK, len)];
        for (int done = 0; done < len; done += tmp.length) {
            int n = Math.min(tmp.length, len - done);
            MemorySegment.copy(data, U16, (first + done) * BYTES_PER_TOKEN, tmp, 0, n);
            for (int i = 0; i < n; i++) dst[off + done + i] = tmp[i] & 0xffff;
        }
    }

    @Override
    public void close() {
        arena.close();
    }

    @Override
    public String toString() {
        return "TokenFile[" + path + ", tokens=" + size() + "]";
    }
}
