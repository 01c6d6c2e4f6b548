package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.comm.transport.local.LocalRanks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A resume loads the newest committed checkpoint that verifies: corrupt or partial newer ones are passed over with
 * what failed, on every rank alike, and never deleted.
 */
@Timeout(120)
class NewestValidLoadTest {
    @TempDir
    Path root;

    /** File name → SHA-256 of its bytes. */
    private static Map<String, String> contents(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            Map<String, String> out = new java.util.TreeMap<>();
            for (Path p : s.toList())
                out.put(p.getFileName().toString(), java.util.HexFormat.of().formatHex(
                        java.security.MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
            return out;
        }
    }

    private static void flipLastByteOf(CheckpointMetadata.Piece victim, Path dir) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(dir.resolve(victim.file()).toFile(), "rw")) {
            long at = victim.fileOffset() + victim.byteLength() - 1;
            raf.seek(at);
            int b = raf.read();
            raf.seek(at);
            raf.write(b ^ 0x10);
        }
    }

    private static CheckpointMetadata.Piece lastPieceIn(Path dir, String file) {
        return CheckpointMetadata.read(dir).items().values().stream().flatMap(i -> i.pieces().stream())
                .filter(p -> p.file().equals(file)).max(java.util.Comparator.comparingLong(CheckpointMetadata.Piece::fileOffset))
                .orElseThrow();
    }

    @Test
    void skipsACorruptShardAndAPartialMetadataAndLoadsTheNewestGoodOne() throws Exception {
        try (Checkpointer c = new Checkpointer(null)) {
            for (int step = 1; step <= 3; step++) c.save(root, Map.of("model", CheckpointerTest.model().fill(step)), SaveOptions.at(step)).join();
        }
        Path s2 = root.resolve("step-000002"), s3 = root.resolve("step-000003");
        CheckpointMetadata.Piece victim = lastPieceIn(s3, "rank-00000.safetensors");
        flipLastByteOf(victim, s3);
        Path meta = s2.resolve("metadata.json");
        Files.write(meta, java.util.Arrays.copyOf(Files.readAllBytes(meta), 40)); // a torn metadata file
        Map<String, String> before3 = contents(s3), before2 = contents(s2);

        ArrayState back = CheckpointerTest.model().fill(9);
        try (Checkpointer c = new Checkpointer(null)) {
            assertThatThrownBy(() -> c.load(root, Map.of("model", back), LoadOptions.latest()))
                    .isInstanceOf(CheckpointCorruptException.class).hasMessageContaining("CRC32C");
            assertThat(back.check(9)).as("a failed load leaves the state as it was").isNull();
            LoadReport r = c.load(root, Map.of("model", back), LoadOptions.newestValid());
            assertThat(r.step()).isEqualTo(1);
            assertThat(r.skipped()).hasSize(2);
            assertThat(r.skipped().get(0)).startsWith("step-000003").contains(victim.file(), victim.tensor(), "CRC32C",
                    "set aside as step-000003.unusable");
            assertThat(r.skipped().get(1)).startsWith("step-000002").contains("metadata", "corrupt");
        }
        assertThat(back.check(1)).isNull();
        assertThat(contents(root.resolve("step-000003.unusable"))).as("set aside, not deleted or rewritten").isEqualTo(before3);
        assertThat(contents(root.resolve("step-000002.unusable"))).isEqualTo(before2);
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000001"));
        assertThat(CheckpointDirectory.steps(root)).containsExactly(root.resolve("step-000001"));

        // the run goes on and saves those steps again; a later resume takes the newest, with nothing to skip
        try (Checkpointer c = new Checkpointer(null)) {
            for (int step = 2; step <= 3; step++) c.save(root, Map.of("model", CheckpointerTest.model().fill(10 + step)), SaveOptions.at(step)).join();
            LoadReport r = c.load(root, Map.of("model", back), LoadOptions.newestValid());
            assertThat(r.step()).isEqualTo(3);
            assertThat(r.skipped()).isEmpty();
        }
        assertThat(back.check(13)).isNull();
        assertThat(contents(root.resolve("step-000003.unusable"))).isEqualTo(before3);
    }

    @Test
    void whenNoCheckpointVerifiesTheErrorNamesEveryOneTried() throws IOException {
        try (Checkpointer c = new Checkpointer(null)) {
            for (int step = 1; step <= 2; step++) c.save(root, Map.of("model", CheckpointerTest.model().fill(step)), SaveOptions.at(step)).join();
        }
        for (String s : List.of("step-000001", "step-000002")) Files.delete(root.resolve(s).resolve("rank-00000.safetensors"));
        ArrayState back = CheckpointerTest.model().fill(9);
        try (Checkpointer c = new Checkpointer(null)) {
            assertThatThrownBy(() -> c.load(root, Map.of("model", back), LoadOptions.newestValid()))
                    .isInstanceOf(CheckpointException.class)
                    .hasMessageContainingAll("no committed checkpoint under " + root + " loads and verifies", "step-000002", "step-000001",
                            "rank-00000.safetensors");
        }
        assertThat(back.check(9)).isNull();
    }

    /**
     * The storage fails to read the newest step's shard (an NFS "stale file handle", an EIO): that is not the
     * checkpoint's fault, so a resume must neither load an older step nor set the newest aside; it fails, naming the
     * error, with the state untouched, and loads the newest once the storage reads again.
     */
    @Test
    void aStorageThatFailsToReadDoesNotMakeTheCheckpointCorrupt() throws Exception {
        try (Checkpointer c = new Checkpointer(null)) {
            for (int step = 1; step <= 2; step++) c.save(root, Map.of("model", CheckpointerTest.model().fill(step)), SaveOptions.at(step)).join();
        }
        java.util.concurrent.atomic.AtomicBoolean failing = new java.util.concurrent.atomic.AtomicBoolean(true);
        var real = new dev.jtrain.checkpoint.storage.posix.PosixStorage(false);
        var flaky = (dev.jtrain.checkpoint.storage.CheckpointStorage) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {dev.jtrain.checkpoint.storage.CheckpointStorage.class}, (proxy, method, args) -> {
                    if (method.getName().equals("openShard") && failing.get() && args[0].toString().endsWith("step-000002"))
                        throw new IOException("Stale file handle");
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        ArrayState back = CheckpointerTest.model().fill(9);
        try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.defaults(), flaky)) {
            assertThatThrownBy(() -> c.load(root, Map.of("model", back), LoadOptions.newestValid()))
                    .isInstanceOf(CheckpointException.class).isNotInstanceOf(CheckpointCorruptException.class)
                    .hasMessageContainingAll("step-000002", "Stale file handle", "not found corrupt");
            assertThat(back.check(9)).as("the state is untouched").isNull();
            assertThat(root.resolve("step-000002")).as("not set aside").isDirectory();
            assertThat(root.resolve("step-000002.unusable")).doesNotExist();
            assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000002"));
            failing.set(false);
            assertThat(c.load(root, Map.of("model", back), LoadOptions.newestValid()).step()).isEqualTo(2);
        }
        assertThat(back.check(2)).isNull();
    }

    /**
     * Removing older checkpoints (keep-last) fails after the commit: the save still succeeds on every rank, says what
     * failed in its report, and the step is committed and loads; the older one stays.
     */
    @Test
    void aRetentionFailureAfterTheCommitIsReportedNotAFailedSave() throws Exception {
        Path r = root.resolve("retain");
        var real = new dev.jtrain.checkpoint.storage.posix.PosixStorage(false);
        var noDelete = (dev.jtrain.checkpoint.storage.CheckpointStorage) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {dev.jtrain.checkpoint.storage.CheckpointStorage.class}, (proxy, method, args) -> {
                    if (method.getName().equals("retain")) throw new IOException("Permission denied");
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        List<String> notes = LocalRanks.run(2, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg, CheckpointerOptions.defaults(), noDelete)) {
                c.save(r, Map.of("state", DistributedCheckpointTest.layout(rank, 2).fill(1)), SaveOptions.at(1).withKeepLast(1)).join();
                return c.save(r, Map.of("state", DistributedCheckpointTest.layout(rank, 2).fill(2)), SaveOptions.at(2).withKeepLast(1)).join().note();
            }
        });
        assertThat(notes).allSatisfy(n -> assertThat(n).contains("committed", "Permission denied"));
        assertThat(CheckpointDirectory.latest(r)).contains(r.resolve("step-000002"));
        assertThat(r.resolve("step-000001")).as("kept: retention failed").isDirectory();
        List<String> loaded = LocalRanks.run(2, (rank, pg) -> {
            ArrayState s = DistributedCheckpointTest.layout(rank, 2).fill(7);
            try (Checkpointer c = new Checkpointer(pg)) {
                c.load(r, Map.of("state", s), LoadOptions.latest());
            }
            return s.check(2);
        });
        assertThat(loaded).containsOnlyNulls();
    }

    /**
     * A tensor only one rank holds is missing from the checkpoint (a model that does not fit it, under sharding only
     * its owner finds out): every rank fails at once naming that rank and tensor, instead of the others waiting in the
     * load's collectives until the timeout; and the checkpoint is not set aside (it is not corrupt).
     */
    @Test
    void aPlanErrorOnOneRankFailsEveryRankAtOnceNamingIt() throws Exception {
        Path r = root.resolve("plan");
        LocalRanks.run(3, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg)) {
                return c.save(r, Map.of("state", DistributedCheckpointTest.layout(rank, 3).fill(1)), SaveOptions.at(1)).join();
            }
        });
        long t0 = System.nanoTime();
        List<String> errors = LocalRanks.run(3, (rank, pg) -> {
            ArrayState s = DistributedCheckpointTest.layout(rank, 3).fill(7);
            if (rank == 2) s.add("m.extra", new long[] {40}, 0, 40, false);
            try (Checkpointer c = new Checkpointer(pg)) {
                assertThatThrownBy(() -> c.load(r, Map.of("state", s), LoadOptions.newestValid()))
                        .isInstanceOf(CheckpointException.class).isNotInstanceOf(CheckpointCorruptException.class);
                try {
                    c.load(r, Map.of("state", s), LoadOptions.latest());
                    return "loaded";
                } catch (CheckpointException e) {
                    return e.getMessage();
                }
            }
        });
        assertThat(System.nanoTime() - t0).as("well before the 60 s collective timeout").isLessThan(20_000_000_000L);
        assertThat(errors).allSatisfy(e -> assertThat(e).contains("rank 2", "m.extra"));
        assertThat(r.resolve("step-000001")).isDirectory();
    }

    /** Rank 1's shard of the newest step is corrupt: both ranks (broadcast load or not) fall back to the same step. */
    @Test
    void everyRankFallsBackToTheSameStep() throws Exception {
        for (boolean broadcast : new boolean[]{false, true}) {
            Path r = root.resolve("b" + broadcast);
            for (int step = 1; step <= 2; step++) {
                int salt = step;
                LocalRanks.run(2, (rank, pg) -> {
                    try (Checkpointer c = new Checkpointer(pg)) {
                        return c.save(r, Map.of("state", DistributedCheckpointTest.layout(rank, 2).fill(salt)), SaveOptions.at(salt)).join();
                    }
                });
            }
            Path s2 = r.resolve("step-000002");
            CheckpointMetadata.Piece victim = lastPieceIn(s2, "rank-00001.safetensors");
            flipLastByteOf(victim, s2);
            List<String> outcomes = LocalRanks.run(2, (rank, pg) -> {
                ArrayState s = DistributedCheckpointTest.layout(rank, 2).fill(7);
                try (Checkpointer c = new Checkpointer(pg)) {
                    LoadReport rep = c.load(r, Map.of("state", s), LoadOptions.newestValid().withBroadcast(broadcast));
                    assertThat(rep.step()).isEqualTo(1);
                    assertThat(rep.skipped()).singleElement().asString().startsWith("step-000002").contains(victim.tensor(), "CRC32C",
                            rank == 0 ? "set aside as step-000002.unusable" : "set aside by rank 0");
                }
                return s.check(1);
            });
            assertThat(outcomes).as("broadcast %s", broadcast).containsOnlyNulls();
            assertThat(r.resolve("step-000002.unusable").resolve(victim.file())).exists();
        }
    }
}
