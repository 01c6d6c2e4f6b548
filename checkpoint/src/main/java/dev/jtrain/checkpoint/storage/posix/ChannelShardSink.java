package dev.jtrain.checkpoint.storage.posix;

import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.tensor.io.DurableFiles;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The portable shard sink: buffered FileChannel writes, fsync, atomic rename. Used where libc is out of reach (not
 * Linux, no native access) or the native writer is turned off ({@code CheckpointerOptions.nativeWriter}).
 */
final class ChannelShardSink implements ShardSink {
    private final Path file;
    private final Path target;
    private final FileChannel channel;
    private boolean published;

    ChannelShardSink(Path file, Path target) throws IOException {
        this.file = file;
        this.target = target;
        this.channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
    }

    @Override public boolean direct() { return false; }

    @Override
    public void write(MemorySegment src, long position) throws IOException {
        ByteBuffer b = src.asByteBuffer();
        while (b.hasRemaining()) channel.write(b, position + b.position());
    }

    @Override public void truncate(long length) throws IOException { channel.truncate(length); }

    @Override public long size() throws IOException { return channel.size(); }

    @Override
    public void publish() throws IOException {
        channel.force(true);
        channel.close();
        DurableFiles.moveAtomically(file, target); // made durable by the coordinator's syncStep
        published = true;
    }

    @Override
    public void close() throws IOException {
        try {
            channel.close();
        } finally {
            if (!published) Files.deleteIfExists(file);
        }
    }
}
