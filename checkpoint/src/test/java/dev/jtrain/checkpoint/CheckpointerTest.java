package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.checkpoint.storage.posix.PosixStorage;

import dev.jtrain.tensor.io.SafetensorsReader;
import dev.jtrain.tensor.state.Stateful;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** One process: format, round trip, plan cache, staging reuse, async, retention, integrity. */
@Timeout(60)
class CheckpointerTest {
    @TempDir
    Path root;

    static ArrayState model() {
        return new ArrayState().whole("wte.weight", false, 37, 21).whole("ln.bias", false, 21).whole("fc.weight", false, 64, 21);
    }

    static Map<String, Stateful> state(ArrayState model, ArrayState trainer) {
        Map<String, Stateful> m = new LinkedHashMap<>();
        m.put("model", model);
        m.put("trainer", trainer);
        return m;
    }

    @Test
    void saveThenLoadRestoresValuesAndMetadataIntoFreshObjects() throws IOException {
        ArrayState a = model().fill(1);
        ArrayState tr = new ArrayState();
        tr.meta.put("step", "17");
        try (Checkpointer c = new Checkpointer(null)) {
            SaveReport r = c.save(root, state(a, tr), SaveOptions.at(17)).join();
            assertThat(r.directory()).isEqualTo(root.resolve("step-000017"));
            assertThat(r.bytesWrittenPerRank()).containsExactly(4L * (37 * 21 + 21 + 64 * 21));
        }
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000017"));
        ArrayState b = model().fill(9);
        ArrayState tr2 = new ArrayState();
        try (Checkpointer c = new Checkpointer(null)) {
            LoadReport r = c.load(root, state(b, tr2), LoadOptions.latest());
            assertThat(r.step()).isEqualTo(17);
        }
        assertThat(b.check(1)).isNull();
        assertThat(tr2.restored).containsEntry("step", "17");
    }

    @Test
    void shardFilesAreSafetensorsAndMetadataIsVersionedJson() throws Exception {
        ArrayState a = model().fill(3);
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, state(a, new ArrayState()), SaveOptions.at(5)).join();
        }
        Path dir = root.resolve("step-000005");
        try (SafetensorsReader r = SafetensorsReader.open(dir.resolve("rank-00000.safetensors"))) {
            assertThat(r.names()).containsExactly("model/wte.weight", "model/ln.bias", "model/fc.weight");
            assertThat(r.info("model/wte.weight").shape()).containsExactly(37, 21);
            float[] w = r.readFloats("model/fc.weight");
            assertThat(w[100]).isEqualTo(ArrayState.value("fc.weight", 100, 3));
        }
        String json = Files.readString(dir.resolve("metadata.json"));
        assertThat(json).contains("\"format\" : \"jtrain-checkpoint\"", "\"version\" : 1", "\"crc32c\"", "\"worldSize\" : 1");
        CheckpointMetadata m = CheckpointMetadata.read(dir);
        assertThat(m.items()).containsKeys("model/wte.weight", "model/ln.bias", "model/fc.weight");
    }

    @Test
    void planCacheHitsWhileTheLayoutIsUnchangedAndMissesAfterAShapeChange() {
        try (Checkpointer c = new Checkpointer(null)) {
            ArrayState a = model().fill(1);
            SaveReport first = c.save(root, state(a, new ArrayState()), SaveOptions.at(1)).join();
            SaveReport second = c.save(root, state(a, new ArrayState()), SaveOptions.at(2)).join();
            // fresh objects with the same layout still hit: the key is the plan, not object identity
            SaveReport third = c.save(root, state(model().fill(2), new ArrayState()), SaveOptions.at(3)).join();
            ArrayState grown = new ArrayState().whole("wte.weight", false, 38, 21).whole("ln.bias", false, 21).whole("fc.weight", false, 64, 21);
            SaveReport fourth = c.save(root, state(grown.fill(1), new ArrayState()), SaveOptions.at(4)).join();
            ArrayState recut = model().fill(1);
            recut.specs.set(1, new ArrayState.Spec("ln.bias", new long[]{21}, 0, 21, true)); // replication changed only
            SaveReport fifth = c.save(root, state(recut, new ArrayState()), SaveOptions.at(5)).join();
            System.out.printf("planning: first %.3f ms, second %.3f ms%n", first.planningNanos() / 1e6, second.planningNanos() / 1e6);
            assertThat(first.planCacheHit()).isFalse();
            assertThat(second.planCacheHit()).isTrue();
            assertThat(third.planCacheHit()).isTrue();
            assertThat(fourth.planCacheHit()).isFalse();
            assertThat(fifth.planCacheHit()).isFalse();
            assertThat(c.planner().cacheHits()).isEqualTo(2);
            assertThat(c.planner().cacheMisses()).isEqualTo(3);
        }
    }

    @Test
    void thePlanningWarmUpRoundTripsAToyTwoRankPlan() {
        SavePlanner.warmUp(); // throws if the codec round trip or the merge changed the plan
        GlobalPlan p = SavePlanner.merge(List.of(
                new LocalPlan(0, 2, List.of(new PlannedShard("m/w", new long[]{8}, "F32", 0, 8, true))),
                new LocalPlan(1, 2, List.of(new PlannedShard("m/w", new long[]{8}, "F32", 0, 8, true)))));
        assertThat(p.bytesWritten(0) + p.bytesWritten(1)).as("a replicated tensor is written once").isEqualTo(32);
    }

    @Test
    void stagingBuffersAreAllocatedOnceAndReusedAcrossSaves() {
        try (Checkpointer c = new Checkpointer(null)) {
            ArrayState a = model().fill(1);
            for (int s = 0; s < 4; s++) c.save(root, state(a, new ArrayState()), SaveOptions.at(s).withAsync(s % 2 == 0)).join();
            assertThat(c.staging().allocations()).isEqualTo(1);
        }
    }

    @Test
    void asyncSaveSnapshotsBeforeReturningSoLaterUpdatesDoNotLeakIn() {
        ArrayState a = model().fill(1);
        try (Checkpointer c = new Checkpointer(null)) {
            CompletableFuture<SaveReport> f = c.save(root, state(a, new ArrayState()), SaveOptions.at(7).withAsync(true));
            a.fill(2); // training goes on while the background writer works
            SaveReport r = f.join();
            assertThat(r.stallNanos()).isLessThanOrEqualTo(r.totalNanos());
        }
        ArrayState b = model();
        try (Checkpointer c = new Checkpointer(null)) {
            c.load(root, state(b, new ArrayState()), LoadOptions.latest());
        }
        assertThat(b.check(1)).isNull();
    }

    @Test
    void anOverlappedSnapshotHoldsTheSavedStateOnceAwaitedEvenWhenTrainingRewritesItRightAfter() {
        // 24 MiB: the writer thread's copy takes milliseconds, so without the fence the rewrite below would race it
        ArrayState big = new ArrayState().whole("a", false, 3 << 20).whole("b", false, 1024, 3 << 10).whole("c", false, 7).fill(1);
        ArrayState tr = new ArrayState();
        tr.meta.put("step", "1");
        try (Checkpointer c = new Checkpointer(null)) {
            for (int round = 1; round <= 3; round++) {
                CompletableFuture<SaveReport> f = c.save(root, state(big, tr), SaveOptions.at(round).withOverlapSnapshot(true).withKeepLast(1));
                tr.meta.put("step", "changed after save"); // metadata is taken before save returns
                assertThat(c.awaitSnapshot()).isGreaterThanOrEqualTo(0);
                big.fill(round + 1); // the optimizer step
                SaveReport r = f.join();
                assertThat(r.snapshotNanos()).isPositive();
                assertThat(r.writeCpuNanos()).isPositive();
                ArrayState back = new ArrayState().whole("a", false, 3 << 20).whole("b", false, 1024, 3 << 10).whole("c", false, 7);
                ArrayState tr2 = new ArrayState();
                c.load(root, state(back, tr2), LoadOptions.latest());
                assertThat(back.check(round)).as("round %d", round).isNull();
                assertThat(tr2.restored).containsEntry("step", round == 1 ? "1" : "changed after save");
                tr.meta.put("step", "changed after save");
            }
            assertThat(c.awaitSnapshot()).isZero(); // nothing in flight
        }
    }

    /**
     * The copy is held back {@code delayMs} after save hands it to the copier, so it can not be done sooner than that
     * after save was called: a save that waited for it would take at least that long, and a fence that waits for it
     * can not return sooner. Both bounds are the delay itself, not a guess at how fast the rest runs on a busy machine.
     */
    @Test
    void anOverlappedSaveReturnsBeforeItsCopyAndTheFenceWaitsForIt() {
        long delayMs = 1_000;
        ArrayState a = model().fill(1);
        try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.defaults(), new PosixStorage(true), delayMs)) {
            long t0 = System.nanoTime();
            CompletableFuture<SaveReport> f = c.save(root, state(a, new ArrayState()), SaveOptions.at(1).withOverlapSnapshot(true));
            long returnedMs = (System.nanoTime() - t0) / 1_000_000;
            c.awaitSnapshot();
            long fencedMs = (System.nanoTime() - t0) / 1_000_000;
            a.fill(2);
            assertThat(returnedMs).as("save returned before the copy").isLessThan(delayMs);
            assertThat(fencedMs).as("the fence returned only after the copy").isGreaterThanOrEqualTo(delayMs);
            assertThat(f.join().stallNanos() / 1_000_000).as("the stall leaves the copy out").isLessThan(delayMs);
            ArrayState b = model();
            c.load(root, state(b, new ArrayState()), LoadOptions.latest());
            assertThat(b.check(1)).isNull();
        }
    }

    @Test
    void overlapSnapshotIsAnAsyncOption() {
        assertThatThrownBy(() -> new SaveOptions(1, false, 0, true)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needs async");
        assertThat(SaveOptions.at(1).withOverlapSnapshot(true).async()).isTrue();
        assertThat(SaveOptions.at(1).withOverlapSnapshot(true).withAsync(false).overlapSnapshot()).isFalse();
    }

    @Test
    void shardFilesStartTheirDataOnA4KiBBoundaryAndEndExactlyWithDirectAndBufferedWrites() throws Exception {
        for (boolean direct : new boolean[]{true, false}) {
            Path r = root.resolve("direct-" + direct);
            // 4 * (37*21 + 21 + 64*21) = 8,568 bytes: the last block is partial, so a direct write pads and cuts back
            ArrayState a = model().fill(5);
            try (Checkpointer c = new Checkpointer(null, new CheckpointerOptions(direct, true, true))) {
                c.save(r, state(a, new ArrayState()), SaveOptions.at(1)).join();
                c.save(r, state(a, new ArrayState()), SaveOptions.at(2).withAsync(true)).join();
                ArrayState b = model();
                c.load(r.resolve("step-000001"), state(b, new ArrayState()), LoadOptions.latest());
                assertThat(b.check(5)).isNull();
            }
            for (String step : new String[]{"step-000001", "step-000002"}) {
                Path f = r.resolve(step).resolve("rank-00000.safetensors");
                long headerLength;
                try (var ch = java.nio.channels.FileChannel.open(f)) {
                    var b = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                    ch.read(b, 0);
                    headerLength = b.flip().getLong();
                }
                assertThat((8 + headerLength) % 4096).as("data section start, directIo=%s", direct).isZero();
                assertThat(Files.size(f)).isEqualTo(8 + headerLength + 4L * (37 * 21 + 21 + 64 * 21));
                try (SafetensorsReader sr = SafetensorsReader.open(f)) {
                    assertThat(sr.readFloats("model/fc.weight")[64 * 21 - 1]).isEqualTo(ArrayState.value("fc.weight", 64 * 21 - 1, 5));
                }
            }
        }
    }

    @Test
    void aBackgroundFailureFailsTheFutureAndTheNextSaveNamingRankAndFileAndLatestStays() throws Exception {
        ArrayState a = model().fill(1);
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, state(a, new ArrayState()), SaveOptions.at(1)).join();
            // a directory where the shard file should go: the rename fails in the background
            Files.createDirectories(root.resolve("step-000002").resolve("rank-00000.safetensors").resolve("blocker"));
            CompletableFuture<SaveReport> f = c.save(root, state(a, new ArrayState()), SaveOptions.at(2).withAsync(true));
            assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(CheckpointException.class).hasMessageContaining("rank 0").hasMessageContaining("rank-00000.safetensors");
            assertThatThrownBy(() -> c.save(root, state(a, new ArrayState()), SaveOptions.at(3)))
                    .isInstanceOf(CheckpointException.class).hasMessageContaining("previous asynchronous save (step 2) failed");
            // surfaced once: the save after that works
            c.save(root, state(a, new ArrayState()), SaveOptions.at(3)).join();
        }
        assertThat(CheckpointDirectory.isCommitted(root.resolve("step-000002"))).isFalse();
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000003"));
    }

    /** A sync save runs on the writer thread now: its failure must still be thrown by save, once, and not again. */
    @Test
    void aSyncSaveFailureIsThrownByThatSaveOnlyAndTheNextSaveAndCloseWork() throws Exception {
        ArrayState a = model().fill(1);
        try (Checkpointer c = new Checkpointer(null)) {
            Files.createDirectories(root.resolve("step-000001").resolve("rank-00000.safetensors").resolve("blocker"));
            assertThatThrownBy(() -> c.save(root, state(a, new ArrayState()), SaveOptions.at(1)))
                    .isInstanceOf(CheckpointException.class).hasMessageContaining("rank 0").hasMessageContaining("rank-00000.safetensors");
            c.save(root, state(a, new ArrayState()), SaveOptions.at(2)).join();
            Thread.currentThread().interrupt(); // a sync save is not cut short by an interrupt, which is kept
            try {
                assertThat(c.save(root, state(a, new ArrayState()), SaveOptions.at(3)).join().step()).isEqualTo(3);
                assertThat(Thread.currentThread().isInterrupted()).isTrue();
            } finally {
                Thread.interrupted();
            }
        }
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000003"));
    }

    @Test
    void retentionKeepsTheLastKCommittedAndDeletesOlderIncompleteOnes() throws Exception {
        ArrayState a = model().fill(1);
        Files.createDirectories(root.resolve("step-000000")); // an interrupted save from an earlier run
        try (Checkpointer c = new Checkpointer(null)) {
            for (int s = 1; s <= 5; s++) c.save(root, state(a, new ArrayState()), SaveOptions.at(s).withKeepLast(2)).join();
        }
        assertThat(CheckpointDirectory.steps(root)).extracting(p -> p.getFileName().toString())
                .containsExactly("step-000004", "step-000005");
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000005"));
    }

    @Test
    void aCommittedCheckpointIsNeverOverwritten() {
        ArrayState a = model().fill(1);
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, state(a, new ArrayState()), SaveOptions.at(1)).join();
            assertThatThrownBy(() -> c.save(root, state(a, new ArrayState()), SaveOptions.at(1)))
                    .isInstanceOf(CheckpointException.class).hasMessageContaining("already committed");
        }
    }

    // ---------------------------------------------------------------- integrity

    private Path savedFile() {
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, state(model().fill(1), new ArrayState()), SaveOptions.at(1)).join();
        }
        return root.resolve("step-000001").resolve("rank-00000.safetensors");
    }

    private void assertLoadFailsUntouched(String... messageParts) {
        assertLoadFailsUntouched(CheckpointerOptions.defaults(), messageParts);
    }

    private void assertLoadFailsUntouched(CheckpointerOptions options, String... messageParts) {
        ArrayState b = model().fill(9);
        ArrayState tr = new ArrayState();
        try (Checkpointer c = new Checkpointer(null, options)) {
            assertThatThrownBy(() -> c.load(root, state(b, tr), LoadOptions.latest()))
                    .isInstanceOf(CheckpointException.class).hasMessageContainingAll(messageParts);
        }
        assertThat(b.check(9)).as("live buffers untouched").isNull();
        assertThat(tr.restored).isNull();
    }

    /** Odd sizes: pieces start mid-block and the reads cross the reader's 8 MiB chunks. */
    private static ArrayState oddSizes() {
        return new ArrayState().whole("a", false, 1_000_003).whole("b", false, 7).whole("c", false, 3_000_001).whole("d", false, 769);
    }

    @Test
    void whatIsNotCachedIsReadDirectlyAndWhatIsCachedThroughThePageCacheWithTheSameResult() throws Exception {
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, Map.of("model", oddSizes().fill(4)), SaveOptions.at(1)).join();
        }
        Path file = root.resolve("step-000001").resolve("rank-00000.safetensors");
        long bytes = 4L * (1_000_003 + 7 + 3_000_001 + 769);
        ArrayState b = oddSizes().fill(9);
        LoadReport cold;
        try (Checkpointer c = new Checkpointer(null)) {
            cold = c.load(root, Map.of("model", b), LoadOptions.latest());
        }
        assertThat(b.check(4)).isNull();
        assertThat(cold.bytesRead()).isEqualTo(bytes);
        // written past the page cache, so read past it, but for what mapping the file to parse its header read around
        // the header (up to read_ahead_kb), which the reader then finds cached
        if (directReadsExpected(file)) assertThat(cold.bytesReadDirect()).isGreaterThan(bytes / 4);

        Files.readAllBytes(file); // now all of it is in the page cache
        ArrayState w = oddSizes().fill(9);
        LoadReport warm;
        try (Checkpointer c = new Checkpointer(null)) {
            warm = c.load(root, Map.of("model", w), LoadOptions.latest());
        }
        assertThat(w.check(4)).isNull();
        assertThat(warm.bytesReadDirect()).isLessThan(bytes / 4); // a chunk mincore finds not quite whole goes direct
    }

    @Test
    void aByteChangedThroughThePageCacheIsSeenByADirectRead() throws Exception {
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, Map.of("model", oddSizes().fill(4)), SaveOptions.at(1)).join();
        }
        Path file = root.resolve("step-000001").resolve("rank-00000.safetensors");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) { // a dirty page, not yet written back
            long at = raf.length() - 4L * 769 - 4L * 1_500_000; // the middle of model/c
            raf.seek(at);
            int v = raf.read();
            raf.seek(at);
            raf.write(v ^ 0x10);
        }
        ArrayState b = oddSizes().fill(9);
        try (Checkpointer c = new Checkpointer(null)) {
            assertThatThrownBy(() -> c.load(root, Map.of("model", b), LoadOptions.latest()))
                    .isInstanceOf(CheckpointException.class).hasMessageContainingAll("rank-00000.safetensors", "model/c", "CRC32C");
        }
        assertThat(b.check(9)).as("live buffers untouched").isNull();
    }

    /**
     * Whether a load of a freshly saved {@code file} should read past the page cache: direct I/O is on, the file system
     * takes it, and the file is not cached (the save wrote it directly; tmpfs holds everything in the page cache).
     */
    static boolean directReadsExpected(Path file) {
        try (var ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.READ, com.sun.nio.file.ExtendedOpenOption.DIRECT);
             var a = java.lang.foreign.Arena.ofConfined()) {
            long from = 1 << 20; // past the header, which opening the file may have read around
            return ch.size() > from && !ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, from, ch.size() - from, a).isLoaded();
        } catch (java.io.IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    @Test
    void aRunThatStartsInTheMiddleOfABlockIsReadInPlace() throws Exception {
        Map<String, Stateful> both = new LinkedHashMap<>();
        both.put("a", new ArrayState().whole("x", false, 1001).fill(2));
        both.put("b", oddSizes().fill(4));
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, both, SaveOptions.at(1)).join();
        }
        Path dir = root.resolve("step-000001");
        long first = CheckpointMetadata.read(dir).items().get("b/a").pieces().getFirst().fileOffset();
        assertThat(first % ReadLayout.ALIGN).as("b's bytes start inside a block").isNotZero();
        boolean direct = directReadsExpected(dir.resolve("rank-00000.safetensors"));
        ArrayState b = oddSizes().fill(9);
        LoadReport r;
        try (Checkpointer c = new Checkpointer(null)) {
            r = c.load(root, Map.of("b", b), LoadOptions.latest()); // only part b: its run starts after a's bytes
        }
        assertThat(b.check(4)).isNull();
        if (direct) assertThat(r.bytesReadDirect()).isGreaterThan(r.bytesRead() / 4); // see the test above
    }

    @ParameterizedTest(name = "swap as pieces land: {0}")
    @ValueSource(booleans = {true, false})
    void aFlippedByteIsCaughtByCrc32cNamingFileAndTensor(boolean swap) throws Exception {
        flipAByteAndLoad(SwapMode.options(swap));
    }

    private void flipAByteAndLoad(CheckpointerOptions options) throws Exception {
        Path f = savedFile();
        long size = Files.size(f);
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(size - 10); // inside model/fc.weight, the last tensor
            int b = raf.read();
            raf.seek(size - 10);
            raf.write(b ^ 0x01);
        }
        assertLoadFailsUntouched(options, "rank-00000.safetensors", "model/fc.weight", "CRC32C");
    }

    @Test
    void aTruncatedFileIsReportedNamingFileAndTensor() throws Exception {
        Path f = savedFile();
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.setLength(raf.length() - 100);
        }
        assertLoadFailsUntouched("rank-00000.safetensors", "model/fc.weight", "truncated");
    }

    @Test
    void aMissingFileIsReportedNamingFileAndItsTensors() throws Exception {
        Files.delete(savedFile());
        assertLoadFailsUntouched("rank-00000.safetensors", "model/wte.weight", "is missing");
    }

    @Test
    void aShapeMismatchIsReportedNamingTensorAndBothShapes() {
        savedFile();
        ArrayState b = new ArrayState().whole("wte.weight", false, 37, 22).whole("ln.bias", false, 21).whole("fc.weight", false, 64, 21).fill(9);
        try (Checkpointer c = new Checkpointer(null)) {
            assertThatThrownBy(() -> c.load(root, state(b, new ArrayState()), LoadOptions.latest()))
                    .isInstanceOf(CheckpointException.class).hasMessageContainingAll("model/wte.weight", "[37, 21]", "[37, 22]");
        }
        assertThat(b.check(9)).isNull();
    }

    /** Adds {@code delta} to field {@code field} of the first piece of {@code item} in the saved step's metadata. */
    private void shiftSavedPiece(String item, String field, long delta) throws Exception {
        Path meta = root.resolve("step-000001").resolve("metadata.json");
        com.fasterxml.jackson.databind.node.ObjectNode m = (com.fasterxml.jackson.databind.node.ObjectNode) Json.MAPPER.readTree(meta.toFile());
        com.fasterxml.jackson.databind.node.ObjectNode piece =
                (com.fasterxml.jackson.databind.node.ObjectNode) m.get("items").get(item).get("pieces").get(0);
        piece.put(field, piece.get(field).asLong() + delta);
        Json.MAPPER.writeValue(meta.toFile(), m);
    }

    /** Metadata pointing a piece at other bytes than the file's header says would load a shifted tensor. */
    @Test
    void aPieceWhoseOffsetDisagreesWithTheFileHeaderIsRefusedNamingFileAndTensor() throws Exception {
        savedFile();
        shiftSavedPiece("model/ln.bias", "fileOffset", 4);
        assertLoadFailsUntouched("rank-00000.safetensors", "model/ln.bias", "the file's header at", "metadata is corrupt");
    }

    /** Metadata whose byte length disagrees with its element count would leave part of a tensor unloaded. */
    @Test
    void aPieceWhoseBytesDoNotMatchItsElementsIsRefusedNamingFileAndTensor() throws Exception {
        savedFile();
        shiftSavedPiece("model/fc.weight", "byteLength", -4); // one element short of its count
        assertLoadFailsUntouched("rank-00000.safetensors", "model/fc.weight", "metadata is corrupt");
    }

    @Test
    void anUncommittedCheckpointIsRefusedByName() throws Exception {
        savedFile();
        Files.delete(root.resolve("step-000001").resolve("metadata.json"));
        try (Checkpointer c = new Checkpointer(null)) {
            assertThatThrownBy(() -> c.load(root.resolve("step-000001"), state(model(), new ArrayState()), LoadOptions.latest()))
                    .isInstanceOf(CheckpointException.class).hasMessageContaining("not committed");
        }
    }

    @Test
    void partialLoadsTakeOnlyTheRequestedParts() {
        ArrayState a = model().fill(4);
        ArrayState opt = new ArrayState().whole("exp_avg.wte.weight", false, 37, 21).fill(5);
        Map<String, Stateful> full = state(a, new ArrayState());
        full.put("optimizer", opt);
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, full, SaveOptions.at(1)).join();
            ArrayState b = model();
            c.load(root, Map.of("model", b), LoadOptions.latest());
            assertThat(b.check(4)).isNull();
            assertThatThrownBy(() -> c.load(root, Map.of("model", b, "missing", new ArrayState().whole("x", false, 3).fill(1)),
                    LoadOptions.latest())).isInstanceOf(CheckpointException.class).hasMessageContaining("missing");
        }
    }

    /**
     * One saved piece feeding two live ranges of one rank (a whole tensor saved by DDP, loaded by a ZeRO rank whose
     * shard of it spans two buckets, and overlapping): neither range may be swapped in from staging, since the first
     * swap would leave the old live values where the second range reads.
     */
    @Test
    void aPieceThatFeedsTwoLiveRangesLoadsBothCorrectly() {
        ArrayState saved = new ArrayState().whole("w", false, 1000).fill(3);
        try (Checkpointer c = new Checkpointer(null)) {
            c.save(root, Map.of("model", saved), SaveOptions.at(1)).join();
        }
        ArrayState split = new ArrayState().add("w", new long[]{1000}, 0, 600, false).add("w", new long[]{1000}, 400, 600, false).fill(8);
        try (Checkpointer c = new Checkpointer(null)) {
            c.load(root, Map.of("model", split), LoadOptions.latest());
        }
        assertThat(split.check(3)).isNull();
    }
}
