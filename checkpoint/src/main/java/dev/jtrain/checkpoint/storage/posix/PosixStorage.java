package dev.jtrain.checkpoint.storage.posix;

import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.checkpoint.storage.ShardSource;
import dev.jtrain.tensor.io.DurableFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Stream;

/**
 * Checkpoints as files on a POSIX file system (local disk or a shared one), laid out as {@link CheckpointDirectory}
 * describes. Durability follows the POSIX recipe: a shard or metadata file is written under a temporary name,
 * fsynced, renamed into place (atomic within one file system), and the directory holding the rename is fsynced.
 * Shards are written with O_DIRECT where the file system takes it ({@link NativeShardSink}).
 */
public final class PosixStorage implements CheckpointStorage {
    private final boolean nativeWriter;

    /** @param nativeWriter write shards through libc (O_DIRECT, sync_file_range) where possible; else FileChannel */
    public PosixStorage(boolean nativeWriter) { this.nativeWriter = nativeWriter; }

    @Override
    public Path stepDir(Path root, long step) { return CheckpointDirectory.stepDir(root, step); }

    @Override
    public OptionalLong stepOf(Path stepDir) { return CheckpointDirectory.stepOf(stepDir); }

    @Override
    public boolean isCommitted(Path stepDir) { return CheckpointDirectory.isCommitted(stepDir); }

    @Override
    public Path resolve(Path root, long step) throws IOException { return CheckpointDirectory.resolve(root, step); }

    @Override
    public List<Path> committedSteps(Path root) throws IOException {
        List<Path> out = new ArrayList<>();
        for (Path p : CheckpointDirectory.steps(root)) if (CheckpointDirectory.isCommitted(p)) out.add(p);
        return out;
    }

    @Override
    public byte[] readMetadata(Path stepDir) throws IOException {
        return Files.readAllBytes(stepDir.resolve(CheckpointDirectory.METADATA));
    }

    @Override
    public ShardSink createShard(Path stepDir, String name, boolean direct) throws IOException {
        Files.createDirectories(stepDir);
        Path target = stepDir.resolve(name), tmp = stepDir.resolve("." + name + ".tmp");
        return nativeWriter && NativeShardSink.supported() ? new NativeShardSink(tmp, target, direct) : new ChannelShardSink(tmp, target);
    }

    @Override
    public ShardSource openShard(Path stepDir, String name, boolean direct) throws IOException {
        return new FileShardSource(stepDir.resolve(name), direct);
    }

    @Override
    public void syncStep(Path stepDir) throws IOException { DurableFiles.fsyncDirectory(stepDir); }

    @Override
    public void commit(Path root, Path stepDir, byte[] metadata) throws IOException {
        writeAtomically(stepDir.resolve(CheckpointDirectory.METADATA), metadata);
        DurableFiles.fsyncDirectory(root);
        writeAtomically(root.resolve(CheckpointDirectory.LATEST),
                (stepDir.getFileName() + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /** Renamed to {@code step-N.unusable} (or {@code .unusable-2}, ...), which no listing takes for a step. */
    @Override
    public Path setAside(Path root, Path stepDir, Path replacement) throws IOException {
        Path aside = stepDir.resolveSibling(stepDir.getFileName() + ".unusable");
        for (int i = 2; Files.exists(aside); i++) aside = stepDir.resolveSibling(stepDir.getFileName() + ".unusable-" + i);
        Optional<Path> latest = CheckpointDirectory.latest(root);
        if (latest.isPresent() && latest.get().getFileName().equals(stepDir.getFileName())) {
            if (replacement != null)
                writeAtomically(root.resolve(CheckpointDirectory.LATEST), (replacement.getFileName() + "\n").getBytes(StandardCharsets.UTF_8));
            else
                Files.delete(root.resolve(CheckpointDirectory.LATEST)); // no older step: the newest committed one is loaded
        }
        DurableFiles.moveAtomically(stepDir, aside);
        DurableFiles.fsyncDirectory(root);
        return aside;
    }

    @Override
    public List<Path> retain(Path root, int keepLast, Path newest) throws IOException {
        if (keepLast <= 0) return List.of();
        long newestStep = CheckpointDirectory.stepOf(newest).getAsLong();
        List<Path> committed = new ArrayList<>();
        List<Path> doomed = new ArrayList<>();
        for (Path p : CheckpointDirectory.steps(root)) {
            long s = CheckpointDirectory.stepOf(p).getAsLong();
            if (CheckpointDirectory.isCommitted(p)) {
                if (s <= newestStep) committed.add(p);
            } else if (s < newestStep) {
                doomed.add(p); // an interrupted save older than what we just committed
            }
        }
        for (int i = 0; i < committed.size() - keepLast; i++)
            if (!committed.get(i).equals(newest)) doomed.add(committed.get(i));
        for (Path p : doomed) deleteTree(p);
        return doomed;
    }

    @Override
    public void warmUp() { NativeShardSink.supported(); }

    /** A file that appears whole or not at all: temporary file, fsync, rename, fsync of the directory. */
    private static void writeAtomically(Path file, byte[] bytes) throws IOException {
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) ch.write(b);
            ch.force(true);
        }
        DurableFiles.moveAtomically(tmp, file);
        DurableFiles.fsyncDirectory(file.toAbsolutePath().getParent());
    }

    /** Deletes the metadata first, so a half-deleted checkpoint is never mistaken for a committed one. */
    private static void deleteTree(Path dir) throws IOException {
        Files.deleteIfExists(dir.resolve(CheckpointDirectory.METADATA));
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }
}
