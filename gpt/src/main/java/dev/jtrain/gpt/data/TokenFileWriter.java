package dev.jtrain.gpt.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Streams tokens into a {@link TokenFile} (uint16 little-endian). Every id is checked against the
 * vocabulary, so a tokenizer bug cannot silently wrap into a wrong token. {@link #close()} fsyncs.
 * Not thread-safe.
 */
public final class TokenFileWriter implements AutoCloseable {
    private final Path path;
    private final int vocabSize;
    private final FileChannel channel;
    private final ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
    private long written;

    /** Creates (or truncates) {@code path}. */
    public TokenFileWriter(Path path, int vocabSize) {
        TokenFile.checkVocab(vocabSize);
        this.path = path;
        this.vocabSize = vocabSize;
        try {
            this.channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create token file " + path + ": " + e.getMessage(), e);
        }
    }

    public void append(int[] tokens, int off, int len) {
        for (int i = 0; i < len; i++) append(tokens[off + i]);
    }

    public void append(int token) {
        if (token < 0 || token >= vocabSize)
            throw new IllegalArgumentException("token id out of vocabulary: id=" + token + ", vocabSize=" + vocabSize
                    + ", position=" + written + ", file=" + path);
        if (!buf.hasRemaining()) flush();
        buf.putShort((short) token);
        written++;
    }

    /** Tokens appended so far. */
    public long size() {
        return written;
    }

    private void flush() {
        buf.flip();
        try {
            while (buf.hasRemaining()) channel.write(buf);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write token file " + path + ": " + e.getMessage(), e);
        }
        buf.clear();
    }

    @Override
    public void close() {
        try (channel) {
            flush();
            channel.force(true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close token file " + path + ": " + e.getMessage(), e);
        }
    }
}
