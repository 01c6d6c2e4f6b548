package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.tensor.state.Stateful;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several ranks as threads over the in-process transport: de-duplication with balance, broadcast load, resharding
 * between world sizes with ZeRO-style arbitrary cuts, plan cache across ranks, a rank failing mid-save.
 */
@Timeout(120)
class DistributedCheckpointTest {
    static final long SEED = 20261122L;

    @TempDir
    Path root;

    @BeforeAll
    static void seed() {
        System.out.println("DistributedCheckpointTest seed=" + SEED);
    }

    /** Replicated "parameters" plus ZeRO-style shards of "optimizer" tensors cut at uneven element boundaries. */
    static ArrayState layout(int rank, int world) {
        ArrayState s = new ArrayState();
        s.whole("p.a", true, 33, 7).whole("p.b", true, 50).whole("p.c", true, 3, 5, 7);
        for (String name : List.of("m.a", "m.b")) {
            long numel = name.equals("m.a") ? 33 * 7 : 50;
            long[] cuts = new long[world + 1];
            java.util.Random rnd = new java.util.Random(SEED + world * 31L + name.hashCode());
            for (int r = 1; r < world; r++) cuts[r] = Math.max(cuts[r - 1], Math.min(numel, numel * r / world + rnd.nextInt(7) - 3));
            cuts[world] = numel;
            long[] mine = ArrayState.range(cuts, rank);
            if (mine[1] > 0) s.add(name, name.equals("m.a") ? new long[]{33, 7} : new long[]{50}, mine[0], (int) mine[1], false);
        }
        s.meta.put("rank", Integer.toString(rank));
        return s;
    }

    private void save(int world, int salt, SaveOptions options) throws Exception {
        if (world == 1) {
            try (Checkpointer c = new Checkpointer(null)) {
                c.save(root, Map.of("state", layout(0, 1).fill(salt)), options).join();
            }
            return;
        }
        LocalRanks.run(world, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg)) {
                return c.save(root, Map.of("state", layout(rank, world).fill(salt)), options).join();
            }
        });
    }

    /** {@code swap}: pieces swapped into the live buffers as they land, or (small files from the page cache) deferred. */
    @ParameterizedTest(name = "{0} ranks -> {1} ranks, broadcast {2}, swap as pieces land {3}")
    @CsvSource({"4,2,false,true", "2,3,false,true", "3,1,false,true", "1,4,false,true", "4,2,true,true", "2,3,true,true",
            "4,2,false,false", "2,3,false,false", "3,1,false,false"})
    void loadReshardsToAnyWorldSize(int from, int to, boolean broadcast, boolean swap) throws Exception {
        reshard(from, to, broadcast, SwapMode.options(swap));
    }

    private void reshard(int from, int to, boolean broadcast, CheckpointerOptions options) throws Exception {
        save(from, 1, SaveOptions.at(3));
        List<String> problems = LocalRanks.run(to, (rank, pg) -> {
            ArrayState s = layout(rank, to).fill(9);
            try (Checkpointer c = new Checkpointer(pg, options)) {
                LoadReport r = c.load(root, Map.of("state", s), LoadOptions.latest().withBroadcast(broadcast));
                assertThat(r.savedWorldSize()).isEqualTo(from);
            }
            // same world size: each rank gets its own metadata back; otherwise rank 0's
            assertThat(s.restored).containsEntry("rank", from == to ? Integer.toString(rank) : "0");
            return s.check(1);
        });
        assertThat(problems).containsOnlyNulls();
    }

    /**
     * On every rank, and for every kind of shard — its part of sharded state, replicated state it reads for itself or
     * to broadcast — bytes that are not cached are read past the page cache, and bytes that are cached through it.
     */
    @ParameterizedTest(name = "broadcast {0}")
    @ValueSource(booleans = {false, true})
    void everyRankReadsWhatIsNotCachedDirectlyAndWhatIsCachedThroughThePageCache(boolean broadcast) throws Exception {
        int world = 2, n = 3_000_001; // files of 24 MB: more than what opening one reads around its header
        java.util.function.IntFunction<ArrayState> state = rank -> new ArrayState()
                .whole("r0", true, n).whole("r1", true, n)
                .add("s0", new long[]{2L * n}, (long) rank * n, n, false);
        LocalRanks.run(world, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg)) {
                return c.save(root, Map.of("model", state.apply(rank).fill(1)), SaveOptions.at(1)).join();
            }
        });
        Path dir = root.resolve("step-000001");
        org.junit.jupiter.api.Assumptions.assumeTrue(CheckpointerTest.directReadsExpected(dir.resolve("rank-00000.safetensors")),
                "direct I/O on, taken by the file system, and the saved file not cached");
        for (boolean cached : List.of(false, true)) {
            if (cached)
                try (var files = Files.list(dir)) {
                    for (Path f : files.toList()) Files.readAllBytes(f);
                }
            List<LoadReport> loads = LocalRanks.run(world, (rank, pg) -> {
                ArrayState s = state.apply(rank).fill(7);
                try (Checkpointer c = new Checkpointer(pg)) {
                    LoadReport r = c.load(root, Map.of("model", s), LoadOptions.latest().withBroadcast(broadcast));
                    assertThat(s.check(1)).isNull();
                    return r;
                }
            });
            for (LoadReport r : loads)
                if (cached) // mincore now and then misses a page of a chunk just read: that chunk then goes direct
                    assertThat(r.bytesReadDirect()).as("cached").isLessThan(r.bytesRead() / 4);
                else // all it read, but for what mapping a file to parse its header read around it (up to read_ahead_kb)
                    assertThat(r.bytesReadDirect()).as("not cached").isGreaterThan(r.bytesRead() / 4);
        }
    }

    @Test
    void replicatedBytesAreWrittenOnceAndSpreadWithinOneLargestTensorOfEven() throws Exception {
        int[] sizes = {5000, 3000, 2500, 1200, 1000, 900, 640, 300, 21, 7};
        int world = 4;
        List<SaveReport> reports = LocalRanks.run(world, (rank, pg) -> {
            ArrayState s = new ArrayState();
            for (int i = 0; i < sizes.length; i++) s.whole("t" + i, true, sizes[i]);
            try (Checkpointer c = new Checkpointer(pg)) {
                return c.save(root, Map.of("model", s.fill(1)), SaveOptions.at(1)).join();
            }
        });
        long[] perRank = reports.get(0).bytesWrittenPerRank();
        long total = 0;
        for (int n : sizes) total += 4L * n;
        long max = java.util.Arrays.stream(perRank).max().orElseThrow(), min = java.util.Arrays.stream(perRank).min().orElseThrow();
        System.out.println("bytes written per rank: " + java.util.Arrays.toString(perRank) + " (total " + total + ")");
        assertThat(java.util.Arrays.stream(perRank).sum()).isEqualTo(total); // each replicated tensor once
        assertThat(max - min).isLessThanOrEqualTo(4L * sizes[0]);
        assertThat(min).isGreaterThan(0); // not all on rank 0
        CheckpointMetadata m = CheckpointMetadata.read(root.resolve("step-000001"));
        for (var item : m.items().values()) assertThat(item.pieces()).hasSize(1);

        // broadcast load: every replicated byte is read from storage once in total, not once per rank
        List<LoadReport> loads = LocalRanks.run(world, (rank, pg) -> {
            ArrayState s = new ArrayState();
            for (int i = 0; i < sizes.length; i++) s.whole("t" + i, true, sizes[i]);
            s.fill(7);
            try (Checkpointer c = new Checkpointer(pg)) {
                LoadReport r = c.load(root, Map.of("model", s), LoadOptions.latest().withBroadcast(true));
                assertThat(s.check(1)).isNull();
                return r;
            }
        });
        long read = 0, received = 0;
        for (LoadReport r : loads) {
            read += r.bytesRead();
            received += r.bytesBroadcast();
        }
        assertThat(read).isEqualTo(total);
        assertThat(received).isEqualTo(total * (world - 1));
    }

    /**
     * A broadcast load sends small shards in batches, one broadcast per batch, and large ones alone: 40 small tensors
     * and 2 large ones on 3 ranks, batches of 16 KiB (four 4 KiB tensors), load every value exactly in far fewer
     * broadcasts than tensors; with batching off it is one broadcast per tensor.
     */
    @ParameterizedTest(name = "batch {0} bytes")
    @ValueSource(longs = {16384, 0})
    void smallShardsTravelInBatchesAndLoadExactly(long batchBytes) throws Exception {
        int world = 3, small = 40;
        java.util.function.Supplier<ArrayState> state = () -> {
            ArrayState s = new ArrayState();
            for (int i = 0; i < small; i++) s.whole("s" + i, true, 1000);
            s.whole("big0", true, 9000).whole("big1", true, 5000);
            return s;
        };
        LocalRanks.run(world, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg)) {
                return c.save(root, Map.of("model", state.get().fill(3)), SaveOptions.at(1)).join();
            }
        });
        CheckpointerOptions options = CheckpointerOptions.defaults().withBroadcastBatchBytes(batchBytes);
        List<LoadReport> loads = LocalRanks.run(world, (rank, pg) -> {
            ArrayState s = state.get().fill(8);
            try (Checkpointer c = new Checkpointer(pg, options)) {
                LoadReport r = c.load(root, Map.of("model", s), LoadOptions.latest().withBroadcast(true));
                assertThat(s.check(3)).isNull();
                return r;
            }
        });
        int tensors = small + 2;
        for (LoadReport r : loads) {
            if (batchBytes == 0) assertThat(r.broadcasts()).isEqualTo(tensors);
            // each root's small tensors four to a batch (at most one partial batch per root), the large ones alone
            else assertThat(r.broadcasts()).isBetween(small / 4 + 2, small / 4 + world + 2);
        }
        long total = 4L * (small * 1000 + 9000 + 5000), received = 0;
        for (LoadReport r : loads) received += r.bytesBroadcast();
        assertThat(received).isEqualTo(total * (world - 1));
    }

    /**
     * Tensors saved in shards by several ranks (ZeRO's optimizer state) and loaded whole on every rank (DDP) under
     * broadcast load: each root assembles a shard from pieces of several writers into its batch before sending it.
     */
    @ParameterizedTest(name = "{0} ranks -> {1} ranks, broadcast batches of {2} bytes")
    @CsvSource({"3,2,0", "3,2,4194304", "2,3,4194304", "4,4,4194304"})
    void shardsSavedInPiecesLoadWholeUnderBroadcast(int from, int to, long batchBytes) throws Exception {
        save(from, 5, SaveOptions.at(1));
        CheckpointerOptions options = CheckpointerOptions.defaults().withBroadcastBatchBytes(batchBytes);
        List<LoadReport> loads = LocalRanks.run(to, (rank, pg) -> {
            ArrayState s = new ArrayState();
            s.whole("p.a", true, 33, 7).whole("p.b", true, 50).whole("p.c", true, 3, 5, 7)
                    .whole("m.a", true, 33, 7).whole("m.b", true, 50); // the moments whole and replicated here
            s.fill(9);
            try (Checkpointer c = new Checkpointer(pg, options)) {
                LoadReport r = c.load(root, Map.of("state", s), LoadOptions.latest().withBroadcast(true));
                assertThat(s.check(5)).isNull();
                return r;
            }
        });
        for (LoadReport r : loads) assertThat(r.broadcasts()).isEqualTo(batchBytes == 0 ? 5 : Math.min(to, 5));
    }

    /**
     * Broadcast load pipelines reads and broadcasts: a root that finds a corrupt shard has already sent earlier ones,
     * and keeps broadcasting (garbage) so no rank waits forever. Every rank must still fail naming the file and the
     * tensor, and no rank's live state may change. With one broadcast per shard, and with the shards in batches.
     */
    @ParameterizedTest(name = "broadcast batches of {0} bytes")
    @ValueSource(longs = {0, CheckpointerOptions.BROADCAST_BATCH_BYTES})
    void aCorruptShardUnderBroadcastLoadFailsEveryRankAndLeavesEveryStateUntouched(long batchBytes) throws Exception {
        int world = 3;
        int[] sizes = {4000, 3000, 2000, 1000, 500, 250};
        LocalRanks.run(world, (rank, pg) -> {
            ArrayState s = new ArrayState();
            for (int i = 0; i < sizes.length; i++) s.whole("t" + i, true, sizes[i]);
            try (Checkpointer c = new Checkpointer(pg)) {
                return c.save(root, Map.of("model", s.fill(1)), SaveOptions.at(1)).join();
            }
        });
        Path dir = root.resolve("step-000001");
        CheckpointMetadata m = CheckpointMetadata.read(dir);
        CheckpointMetadata.Piece victim = m.items().get("model/t3").pieces().getFirst();
        try (var raf = new java.io.RandomAccessFile(dir.resolve(victim.file()).toFile(), "rw")) {
            long at = victim.fileOffset() + 17;
            raf.seek(at);
            int b = raf.read();
            raf.seek(at);
            raf.write(b ^ 0x40);
        }
        List<String> outcomes = LocalRanks.run(world, (rank, pg) -> {
            ArrayState s = new ArrayState();
            for (int i = 0; i < sizes.length; i++) s.whole("t" + i, true, sizes[i]);
            s.fill(7);
            try (Checkpointer c = new Checkpointer(pg, CheckpointerOptions.defaults().withBroadcastBatchBytes(batchBytes))) {
                c.load(root, Map.of("model", s), LoadOptions.latest().withBroadcast(true));
                return "rank " + rank + " loaded a corrupt checkpoint";
            } catch (CheckpointException e) {
                assertThat(e.getMessage()).contains(victim.file(), victim.tensor(), "CRC32C", "live state untouched");
                return s.check(7); // null: untouched
            }
        });
        assertThat(outcomes).containsOnlyNulls();
    }

    /**
     * Loading swaps pieces into the live buffers as they land. A rank whose files are all good has swapped everything
     * in by the time the agreement reports another rank's corrupt last piece: it must put every value back.
     */
    @ParameterizedTest(name = "swap as pieces land: {0}")
    @ValueSource(booleans = {true, false})
    void aCorruptPieceOnOneRankUndoesWhatEveryOtherRankHadAlreadyLoaded(boolean swap) throws Exception {
        corruptLastPieceOfRank1AndLoad(SwapMode.options(swap));
    }

    private void corruptLastPieceOfRank1AndLoad(CheckpointerOptions options) throws Exception {
        save(2, 1, SaveOptions.at(1));
        Path dir = root.resolve("step-000001");
        CheckpointMetadata m = CheckpointMetadata.read(dir);
        CheckpointMetadata.Piece victim = m.items().values().stream().flatMap(i -> i.pieces().stream())
                .filter(p -> p.file().equals("rank-00001.safetensors"))
                .max(java.util.Comparator.comparingLong(CheckpointMetadata.Piece::fileOffset)).orElseThrow();
        try (var raf = new java.io.RandomAccessFile(dir.resolve(victim.file()).toFile(), "rw")) {
            long at = victim.fileOffset() + victim.byteLength() - 1;
            raf.seek(at);
            int b = raf.read();
            raf.seek(at);
            raf.write(b ^ 0x10);
        }
        List<String> outcomes = LocalRanks.run(2, (rank, pg) -> {
            ArrayState s = layout(rank, 2).fill(7);
            try (Checkpointer c = new Checkpointer(pg, options)) {
                c.load(root, Map.of("state", s), LoadOptions.latest());
                return "rank " + rank + " loaded a corrupt checkpoint";
            } catch (CheckpointException e) {
                assertThat(e.getMessage()).contains(victim.file(), victim.tensor(), "CRC32C", "live state untouched");
                return s.check(7); // null: every value put back
            }
        });
        assertThat(outcomes).containsOnlyNulls();
    }

    @Test
    void planCacheHitsOnEveryRankAndMissesWhenTheLayoutChanges() throws Exception {
        List<boolean[]> hits = LocalRanks.run(2, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg)) {
                ArrayState s = layout(rank, 2).fill(1);
                SaveReport a = c.save(root, Map.of("state", s), SaveOptions.at(1)).join();
                SaveReport b = c.save(root, Map.of("state", s), SaveOptions.at(2).withAsync(true)).join();
                ArrayState grown = layout(rank, 2).whole("p.d", true, 11).fill(1);
                SaveReport d = c.save(root, Map.of("state", grown), SaveOptions.at(3)).join();
                if (rank == 0) System.out.printf("2 ranks: planning first %.3f ms, cached %.3f ms, after change %.3f ms%n",
                        a.planningNanos() / 1e6, b.planningNanos() / 1e6, d.planningNanos() / 1e6);
                return new boolean[]{a.planCacheHit(), b.planCacheHit(), d.planCacheHit()};
            }
        });
        for (boolean[] h : hits) assertThat(h).containsExactly(false, true, false);
    }

    /**
     * A layout change on some ranks only makes only those miss the plan cache: they plan while the others commit.
     * Every rank must fail that save at once with a message naming who changed, and the next save must replan on
     * every rank and commit.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1})
    @Timeout(60)
    void aLayoutChangeOnOneRankOnlyFailsThatSaveClearlyOnEveryRankAndTheNextSaveReplans(int changer) throws Exception {
        List<String> outcomes = LocalRanks.run(2, (rank, pg) -> {
            try (Checkpointer c = new Checkpointer(pg)) {
                ArrayState s = layout(rank, 2).fill(1);
                c.save(root, Map.of("state", s), SaveOptions.at(1)).join();
                ArrayState mine = rank == changer ? layout(rank, 2).whole("p.d", true, 11).fill(2) : layout(rank, 2).fill(2);
                long t0 = System.nanoTime();
                String seen;
                try {
                    c.save(root, Map.of("state", mine), SaveOptions.at(2)).join();
                    seen = "committed";
                } catch (CheckpointException | java.util.concurrent.CompletionException e) {
                    seen = e instanceof java.util.concurrent.CompletionException ? e.getCause().getMessage() : e.getMessage();
                }
                assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(20_000); // no waiting for a comm timeout
                ArrayState same = layout(rank, 2).whole("p.d", true, 11).fill(3);
                SaveReport third = c.save(root, Map.of("state", same), SaveOptions.at(3)).join();
                assertThat(third.planCacheHit()).isFalse();
                return seen;
            }
        });
        for (String o : outcomes)
            assertThat(o).contains("not committed").contains("changed on rank(s) [" + changer + "]")
                    .contains("not on rank(s) [" + (1 - changer) + "]");
        assertThat(CheckpointDirectory.isCommitted(root.resolve("step-000002"))).isFalse();
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000003"));
    }

    @Test
    void aRankThatCannotWriteFailsTheSaveOnEveryRankAndLatestStaysPut() throws Exception {
        save(2, 1, SaveOptions.at(1));
        // rank 1's shard file cannot be created: a directory is in its way
        java.nio.file.Files.createDirectories(root.resolve("step-000002").resolve("rank-00001.safetensors").resolve("x"));
        List<String> errors = LocalRanks.run(2, (rank, pg) -> {
            Checkpointer c = new Checkpointer(pg);
            String seen;
            try {
                c.save(root, Map.of("state", layout(rank, 2).fill(2)), SaveOptions.at(2).withAsync(true)).join();
                seen = "no error";
            } catch (java.util.concurrent.CompletionException e) {
                seen = e.getCause().getMessage();
            }
            // close surfaces it too (a caller that never looked at the future still hears of it)
            try {
                c.close();
                return "close did not throw";
            } catch (CheckpointException e) {
                assertThat(e).hasMessageContaining("previous asynchronous save (step 2) failed");
            }
            return seen;
        });
        for (String e : errors) assertThat(e).contains("rank 1").contains("rank-00001.safetensors").contains("not committed");
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000001"));
        assertThat(CheckpointDirectory.isCommitted(root.resolve("step-000002"))).isFalse();
    }

    /**
     * The ranks are lost after rank 0 has committed but before they hear its verdict: rank 0 says the step was
     * committed (it was: 'latest' names it and it loads), rank 1 that it cannot know. Neither may claim "not committed".
     */
    @Test
    void ranksLostBetweenTheCommitAndItsVerdictSayWhatTheyKnow() throws Exception {
        save(2, 1, SaveOptions.at(1));
        dev.jtrain.comm.ProcessGroup[] groups = new dev.jtrain.comm.ProcessGroup[2];
        java.util.concurrent.CountDownLatch both = new java.util.concurrent.CountDownLatch(2);
        var posix = new dev.jtrain.checkpoint.storage.posix.PosixStorage(true);
        // rank 0's storage: the commit lands, then both ranks' links go, as when a host dies at that moment
        var losingAfterCommit = new CheckpointStorageTest.Recording() {
            @Override
            public void commit(Path r, Path stepDir, byte[] metadata) throws java.io.IOException {
                posix.commit(r, stepDir, metadata);
                for (var g : groups) g.abort(new dev.jtrain.comm.CommException("rank 1 on host node1 is gone (simulated)"), 0);
            }
        };
        List<String> errors = LocalRanks.run(2, (rank, pg) -> {
            groups[rank] = pg;
            both.countDown();
            try {
                both.await();
                new Checkpointer(pg, CheckpointerOptions.defaults(), losingAfterCommit)
                        .save(root, Map.of("state", layout(rank, 2).fill(2)), SaveOptions.at(2)).join();
                return "no error";
            } catch (java.util.concurrent.CompletionException | CheckpointException e) {
                return e instanceof CheckpointException ? e.getMessage() : e.getCause().getMessage();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        assertThat(errors.get(0)).contains("rank 0: checkpoint", "step-000002 was committed", "A resume loads it")
                .doesNotContain("not committed");
        assertThat(errors.get(1)).contains("rank 1: checkpoint", "step-000002 may or may not be committed")
                .doesNotContain("not committed:");
        assertThat(CheckpointDirectory.latest(root)).contains(root.resolve("step-000002"));
        ArrayState back = layout(0, 1);
        try (Checkpointer c = new Checkpointer(null)) {
            c.load(root, Map.of("state", back), LoadOptions.latest());
        }
        assertThat(back.check(2)).isNull();
    }

    static Map<String, Stateful> one(String key, Stateful s) {
        return Map.of(key, s);
    }
}
