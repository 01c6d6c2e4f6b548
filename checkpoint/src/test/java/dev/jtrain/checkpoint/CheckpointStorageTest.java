package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.checkpoint.storage.ShardSource;
import dev.jtrain.checkpoint.storage.posix.PosixStorage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The checkpoint writes and commits through its storage seam, and a storage failure never costs the last good step. */
@Timeout(60)
class CheckpointStorageTest {
    @TempDir
    Path root;

    /** POSIX storage underneath, every call recorded; optionally failing the commit or refusing direct writes once. */
    static class Recording implements CheckpointStorage {
        final PosixStorage posix = new PosixStorage(true);
        // synchronized: tests share one recording storage between ranks' threads
        final List<String> calls = java.util.Collections.synchronizedList(new ArrayList<>());
        boolean failCommit;
        boolean refuseDirectOnce;

        @Override
        public Path stepDir(Path root, long step) { return posix.stepDir(root, step); }

        @Override
        public java.util.OptionalLong stepOf(Path stepDir) { return posix.stepOf(stepDir); }

        @Override
        public boolean isCommitted(Path stepDir) { return posix.isCommitted(stepDir); }

        @Override
        public Path resolve(Path root, long step) throws IOException {
            Path dir = posix.resolve(root, step);
            calls.add("resolve " + dir.getFileName());
            return dir;
        }

        @Override
        public Path setAside(Path root, Path stepDir, Path replacement) throws IOException {
            calls.add("setAside " + stepDir.getFileName());
            return posix.setAside(root, stepDir, replacement);
        }

        @Override
        public List<Path> committedSteps(Path root) throws IOException { return posix.committedSteps(root); }

        @Override
        public byte[] readMetadata(Path stepDir) throws IOException {
            calls.add("readMetadata " + stepDir.getFileName());
            return posix.readMetadata(stepDir);
        }

        @Override
        public ShardSink createShard(Path stepDir, String name, boolean direct) throws IOException {
            calls.add("createShard " + stepDir.getFileName() + "/" + name + (direct ? " direct" : " buffered"));
            ShardSink s = posix.createShard(stepDir, name, direct);
            if (!refuseDirectOnce || !direct) return s;
            refuseDirectOnce = false;
            return new ShardSink() { // a file system that takes direct I/O at open, then refuses the writes
                @Override public boolean direct() { return true; }
                @Override public void write(MemorySegment src, long position) throws IOException { throw new DirectRefused("refused"); }
                @Override public void truncate(long length) throws IOException { s.truncate(length); }
                @Override public long size() throws IOException { return s.size(); }
                @Override public void publish() throws IOException { s.publish(); }
                @Override public void close() throws IOException { s.close(); }
            };
        }

        @Override
        public ShardSource openShard(Path stepDir, String name, boolean direct) throws IOException {
            calls.add("openShard " + stepDir.getFileName() + "/" + name);
            return posix.openShard(stepDir, name, direct);
        }

        @Override
        public void syncStep(Path stepDir) throws IOException {
            calls.add("syncStep " + stepDir.getFileName());
            posix.syncStep(stepDir);
        }

        @Override
        public void commit(Path root, Path stepDir, byte[] metadata) throws IOException {
            calls.add("commit " + stepDir.getFileName());
            if (failCommit) throw new IOException("disk full (simulated)");
            posix.commit(root, stepDir, metadata);
        }

        @Override
        public List<Path> retain(Path root, int keepLast, Path newest) throws IOException {
            calls.add("retain " + keepLast);
            return posix.retain(root, keepLast, newest);
        }
    }

    private static ArrayState model(int salt) { return CheckpointerTest.model().fill(salt); }

    @Test
    void aSaveCreatesPublishesSyncsThenCommitsThroughTheStorage() {
        Recording storage = new Recording();
        try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.defaults(), storage)) {
            c.save(root, Map.of("model", model(1)), SaveOptions.at(3)).join();
        }
        assertThat(storage.calls).containsExactly("createShard step-000003/rank-00000.safetensors direct", "syncStep step-000003",
                "commit step-000003", "retain 0");
        ArrayState back = model(9);
        try (Checkpointer c = new Checkpointer(null)) {
            c.load(root, Map.of("model", back), LoadOptions.latest());
        }
        assertThat(back.check(1)).isNull();
    }

    @Test
    void aLoadReadsEveryShardThroughTheStorage() {
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, Map.of("model", model(5)), SaveOptions.at(2)).join();
        }
        Recording storage = new Recording();
        ArrayState back = model(9);
        try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.defaults(), storage)) {
            c.load(root, Map.of("model", back), LoadOptions.latest());
        }
        assertThat(storage.calls).containsExactly("resolve step-000002", "readMetadata step-000002",
                "openShard step-000002/rank-00000.safetensors");
        assertThat(back.check(5)).isNull();
    }

    @Test
    void aFailedCommitLeavesTheLastGoodCheckpointLatestAndLoadable() throws IOException {
        Recording storage = new Recording();
        try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.defaults(), storage)) {
            c.save(root, Map.of("model", model(1)), SaveOptions.at(1)).join();
            storage.failCommit = true;
            assertThatThrownBy(() -> c.save(root, Map.of("model", model(2)), SaveOptions.at(2)).join())
                    .hasMessageContaining("not committed").hasMessageContaining("disk full");
        }
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000001"));
        assertThat(CheckpointDirectory.isCommitted(root.resolve("step-000002"))).isFalse();
        ArrayState back = model(9);
        try (Checkpointer c = new Checkpointer(null)) {
            assertThat(c.load(root, Map.of("model", back), LoadOptions.latest()).step()).isEqualTo(1);
        }
        assertThat(back.check(1)).isNull();
    }

    @Test
    void directWritesRefusedAfterOpenAreRedoneBuffered() {
        Recording storage = new Recording();
        storage.refuseDirectOnce = true;
        try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.defaults(), storage)) {
            c.save(root, Map.of("model", model(4)), SaveOptions.at(1)).join();
        }
        assertThat(storage.calls).startsWith("createShard step-000001/rank-00000.safetensors direct",
                "createShard step-000001/rank-00000.safetensors buffered");
        assertThat(CheckpointInspector.verify(root.resolve("step-000001")).ok()).isTrue();
        ArrayState back = model(9);
        try (Checkpointer c = new Checkpointer(null)) {
            c.load(root, Map.of("model", back), LoadOptions.latest());
        }
        assertThat(back.check(4)).isNull();
    }
}
