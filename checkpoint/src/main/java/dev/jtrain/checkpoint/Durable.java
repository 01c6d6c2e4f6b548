package dev.jtrain.checkpoint;

import dev.jtrain.tensor.io.DurableFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The POSIX recipe for a file that appears whole or not at all: write a temporary file in the same directory,
 * fsync it, rename it over the target (atomic within one file system), fsync the directory (the rename lives in the
 * directory's data). A crash at any point leaves the old file or the complete new one.
 */
final class Durable {
    private Durable() {}

    static void writeAtomically(Path file, byte[] bytes) throws IOException {
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) ch.write(b);
            ch.force(true);
        }
        renameAtomically(tmp, file);
    }

    static void renameAtomically(Path tmp, Path file) throws IOException {
        rename(tmp, file);
        fsyncDirectory(file.toAbsolutePath().getParent());
    }

    /**
     * Rename without the directory fsync, for shard files: the coordinator fsyncs the step directory once, after every
     * rank reported and before it writes the metadata, which makes all the renames durable before the commit.
     */
    static void rename(Path tmp, Path file) throws IOException { DurableFiles.moveAtomically(tmp, file); }

    static void fsyncDirectory(Path dir) throws IOException { DurableFiles.fsyncDirectory(dir); }
}
