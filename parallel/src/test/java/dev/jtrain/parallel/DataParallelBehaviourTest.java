package dev.jtrain.parallel;

import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.Rng;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.jtrain.comm.transport.Combiner;
import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.Transport;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

@Timeout(120)
class DataParallelBehaviourTest {
    /** Records collective launches in order, with the moment the first layer's gradient became final. */
    static final class Recorder implements CommTrace {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());

        @Override public void begin(String name, long bytes) { events.add("begin " + name); }

        @Override public void end(String name) {}
    }

    static DataParallel make(int stage, FlatParameters flat, dev.jtrain.comm.ProcessGroup pg, Recorder rec) {
        DataParallelOptions o = DataParallelOptions.defaults().withZeroStage(stage).withBuckets(512, 2048);
        return stage == 0 ? new DistributedDataParallel(flat, pg, o, rec) : new ZeroOptimizer(flat, pg, o, rec);
    }

    static int[] ids(long seed, int n, int vocab) {
        Rng r = new Rng(seed);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = r.nextInt(vocab);
        return a;
    }

    /**
     * Buckets launch in index order on every rank, and bucket 0 (the last layers) is launched from a backward hook
     * before the first layer's gradient (the tied embedding, final only at the very end of backward) exists.
     */
    @ParameterizedTest(name = "ZeRO stage {0}")
    @ValueSource(ints = {0, 1, 2})
    void bucketsLaunchInOrderWhileBackwardRuns(int stage) throws Exception {
        List<List<String>> perRank = LocalRanks.run(2, (rank, pg) -> {
            TinyLm m = new TinyLm(37, 21, 1);
            FlatParameters flat = FlatParameters.of(m);
            Recorder rec = new Recorder();
            DataParallel dp = make(stage, flat, pg, rec);
            m.wte.weight.registerPostAccumulateGradHook(t -> rec.events.add("embedding grad final"));
            dp.zeroGrad();
            dp.beginMicroStep(true);
            m.loss(ids(rank, 32, 37), ids(rank + 9, 32, 37), 4, 8).backward();
            dp.finishGradients();
            int buckets = stage == 0 ? ((DistributedDataParallel) dp).plan().buckets().size() : ((ZeroOptimizer) dp).plan().buckets().size();
            assertThat(buckets).isGreaterThan(2);
            return new ArrayList<>(rec.events);
        });
        for (List<String> ev : perRank) {
            assertThat(ev.indexOf("embedding grad final")).isGreaterThan(ev.indexOf(ev.stream().filter(e -> e.endsWith("bucket 0")).findFirst().orElseThrow()));
            List<String> launches = ev.stream().filter(e -> e.startsWith("begin")).toList();
            for (int i = 0; i < launches.size(); i++) assertThat(launches.get(i)).endsWith("bucket " + i);
        }
        assertThat(perRank.get(1).stream().filter(e -> e.startsWith("begin")).toList())
                .isEqualTo(perRank.get(0).stream().filter(e -> e.startsWith("begin")).toList());
    }

    /**
     * A link that takes {@code SLOW_MS} per message while {@code slow} is on, counting the messages it finished (the
     * flag and the count are shared by the ranks).
     */
    record SlowLink(Transport inner, AtomicBoolean slow, AtomicInteger finished) implements Transport {
        static final long SLOW_MS = 150;

        private void onTheWire(Runnable send) {
            boolean s = slow.get();
            if (s) {
                try {
                    Thread.sleep(SLOW_MS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            send.run();
            if (s) finished.incrementAndGet();
        }

        @Override public int rank() { return inner.rank(); }
        @Override public int size() { return inner.size(); }
        @Override public long timeoutMs() { return inner.timeoutMs(); }
        @Override public LinkKind linkKind(int peer) { return inner.linkKind(peer); }
        @Override public void close() { }
        @Override public void send(int peer, int tag, MemorySegment src) { onTheWire(() -> inner.send(peer, tag, src)); }
        @Override public void recv(int peer, int tag, MemorySegment dst) { inner.recv(peer, tag, dst); }
        @Override public void sendRecv(int to, MemorySegment src, int from, MemorySegment dst, int tag) {
            onTheWire(() -> inner.sendRecv(to, src, from, dst, tag));
        }
        @Override public boolean combinesOnArrival(int to, int from) { return inner.combinesOnArrival(to, from); }
        @Override public void sendRecvCombine(int to, MemorySegment src, int from, MemorySegment acc, int tag, Combiner c) {
            onTheWire(() -> inner.sendRecvCombine(to, src, from, acc, tag, c));
        }
    }

    /**
     * Overlap: bucket 1's gradients, all of them, are computed while bucket 0's collective is still on the (slowed)
     * wire, for DDP and ZeRO-1/2. Buckets of two and three parameters here, so a bucket has compute after its first
     * gradient. ZeRO stages gradients through pooled buffers; with one buffer, bucket 1 waited for bucket 0's
     * collective before it could fill (stage 2) or go out (stage 1), and computing and communicating took turns.
     */
    @ParameterizedTest(name = "ZeRO stage {0}")
    @ValueSource(ints = {0, 1, 2})
    void aBucketsGradientsAreComputedWhileTheBucketBeforeIsOnTheWire(int stage) throws Exception {
        AtomicBoolean slow = new AtomicBoolean();
        AtomicInteger finished = new AtomicInteger();
        List<Integer> finishedInBucket1 = LocalRanks.run(2, t -> new SlowLink(t, slow, finished), (rank, pg) -> {
            TinyLm m = new TinyLm(37, 21, 1);
            FlatParameters flat = FlatParameters.of(m);
            DataParallelOptions o = DataParallelOptions.defaults().withZeroStage(stage).withBuckets(5500, 5700);
            DataParallel dp = stage == 0 ? new DistributedDataParallel(flat, pg, o, null) : new ZeroOptimizer(flat, pg, o, null);
            BucketPlan plan = stage == 0 ? ((DistributedDataParallel) dp).plan() : ((ZeroOptimizer) dp).plan();
            assertThat(plan.buckets()).hasSize(3).allSatisfy(b -> assertThat(b.lastSlot()).isGreaterThan(b.firstSlot()));
            AtomicInteger atLast = new AtomicInteger(-1);
            BucketPlan.Bucket b1 = plan.buckets().get(1);
            for (int i = b1.firstSlot(); i <= b1.lastSlot(); i++) // hooks after the strategy's own (registered first)
                flat.slots().get(i).param().registerPostAccumulateGradHook(t -> atLast.set(finished.get()));
            dp.zeroGrad();
            dp.beginMicroStep(true);
            pg.barrier();
            if (rank == 0) slow.set(true); // the ranks share the flag; both see it before backward
            pg.barrier();
            finished.set(0);
            m.loss(ids(rank, 32, 37), ids(rank + 9, 32, 37), 4, 8).backward();
            dp.finishGradients();
            return atLast.get();
        });
        assertThat(finishedInBucket1).as("messages finished (by either rank) when bucket 1's last gradient arrived")
                .containsOnly(0);
    }

    /**
     * ZeRO-3's overlap in backward: a block's gradients are computed while the block after it is reduce-scattered on
     * the (slowed) wire. Gradient buffers are pooled by size, and blocks have one size; with one buffer per size, each
     * block's backward waited for the previous block's reduce-scatter to finish before it could start, so no
     * reduce-scatter ever overlapped backward.
     */
    @Test
    void zero3ComputesABlocksGradientsWhileTheBlockAfterItIsReduceScattered() throws Exception {
        AtomicBoolean slow = new AtomicBoolean();
        List<Boolean> overlapped = LocalRanks.run(2, t -> new SlowLink(t, slow, new AtomicInteger()), (rank, pg) -> {
            var m = new FullyShardedTest.DeepTinyLm(1);
            AtomicInteger reduceScattering = new AtomicInteger(); // launched on this rank, not yet complete
            CommTrace trace = new CommTrace() {
                @Override public void begin(String name, long bytes) { if (name.startsWith("reduce_scatter")) reduceScattering.incrementAndGet(); }
                @Override public void end(String name) { if (name.startsWith("reduce_scatter")) reduceScattering.decrementAndGet(); }
            };
            DataParallel dp = DataParallel.create(FlatParameters.of(m), m, pg, DataParallelOptions.defaults().withZeroStage(3), trace);
            java.util.concurrent.atomic.AtomicReference<Boolean> busy = new java.util.concurrent.atomic.AtomicReference<>();
            for (var p : m.units().get(FullyShardedTest.BLOCKS - 2)) // hooks after the strategy's own
                p.registerPostAccumulateGradHook(t -> {
                    if (busy.get() != null) return;
                    try { // a completed collective's end reaches the trace a moment after its waiter wakes
                        Thread.sleep(50);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    busy.set(reduceScattering.get() > 0);
                });
            for (int step = 0; step < 2; step++) { // the second step runs on the pool the first one made
                dp.zeroGrad();
                dp.beginMicroStep(true);
                pg.barrier();
                if (rank == 0) slow.set(step == 1);
                pg.barrier();
                busy.set(null);
                int[][] b = FullyShardedTest.batch(step, rank, 2);
                m.loss(b[0], b[1]).backward();
                dp.finishGradients();
                dp.step(1e-2f, 1f);
            }
            return busy.get();
        });
        assertThat(overlapped).as("a reduce-scatter on the wire when the last block but one had its first gradient").containsOnly(true);
    }

    /**
     * ZeRO-2 without overlap keeps the gradients until backward ends and then stages them bucket by bucket through
     * the two staging buffers, instead of one buffer per bucket (which added up to more than the whole gradient), and
     * trains bitwise as with overlap.
     */
    @Test
    void zero2WithoutOverlapStagesThroughTwoBuffersAndTrainsAsWithOverlap() throws Exception {
        List<float[]> params = new ArrayList<>();
        for (boolean overlap : new boolean[] {true, false}) {
            List<Object[]> ranks = LocalRanks.run(2, (rank, pg) -> {
                TinyLm m = new TinyLm(37, 21, 1);
                FlatParameters flat = FlatParameters.of(m);
                ZeroOptimizer z = new ZeroOptimizer(flat, pg, DataParallelOptions.defaults().withZeroStage(2).withBuckets(512, 2048)
                        .withOverlap(overlap), null);
                for (int step = 0; step < 2; step++) {
                    z.zeroGrad();
                    z.beginMicroStep(true);
                    m.loss(ids(rank + step, 32, 37), ids(rank + 9, 32, 37), 4, 8).backward();
                    z.finishGradients();
                    z.step(1e-2f, 1f);
                }
                assertThat(z.plan().buckets().size()).isGreaterThan(3);
                long largest = z.plan().buckets().stream().mapToLong(b -> (b.length() + 1L) / 2 * 3).max().orElseThrow();
                return new Object[] {flat.data().clone(), z.memory().stagingBytes(), largest};
            });
            long staging = (long) ranks.get(0)[1], largest = (long) ranks.get(0)[2];
            assertThat(staging).as("overlap %s: two buffers of the largest bucket's 3 shards", overlap)
                    .isBetween(2 * 4 * largest, 2 * 4 * (largest + 3 * 16));
            params.add((float[]) ranks.get(0)[0]);
        }
        assertThat(params.get(1)).containsExactly(params.get(0));
    }

    @ParameterizedTest(name = "ZeRO stage {0}")
    @ValueSource(ints = {0, 1, 2})
    void noSyncMicroStepsDoNotCommunicate(int stage) throws Exception {
        List<Integer> counts = LocalRanks.run(2, (rank, pg) -> {
            TinyLm m = new TinyLm(37, 21, 1);
            FlatParameters flat = FlatParameters.of(m);
            Recorder rec = new Recorder();
            DataParallel dp = make(stage, flat, pg, rec);
            dp.zeroGrad();
            dp.beginMicroStep(false);
            m.loss(ids(rank, 32, 37), ids(rank + 9, 32, 37), 4, 8).backward();
            assertThat(dp.finishGradients()).isZero();
            int afterNoSync = rec.events.size();
            dp.beginMicroStep(true);
            m.loss(ids(rank + 1, 32, 37), ids(rank + 7, 32, 37), 4, 8).backward();
            dp.finishGradients();
            assertThat(rec.events.size()).isGreaterThan(afterNoSync);
            return afterNoSync;
        });
        assertThat(counts).containsOnly(0);
    }

    /**
     * World size 3 with a parameter count not divisible by 3: every element of every parameter is owned by exactly one
     * rank (its m and v live there and nowhere else), and all ranks end with the same parameters.
     */
    @Test
    void zeroShardsCoverEveryParameterOnceForWorldThree() throws Exception {
        record Owned(float[] params, List<dev.jtrain.tensor.state.TensorShard> shards) {}
        List<Owned> ranks = LocalRanks.run(3, (rank, pg) -> {
            TinyLm m = new TinyLm(37, 21, 1);
            FlatParameters flat = FlatParameters.of(m);
            assertThat(flat.parameterCount() % 3).isNotZero();
            ZeroOptimizer z = new ZeroOptimizer(flat, pg, DataParallelOptions.defaults().withZeroStage(2).withBuckets(512, 2048), null);
            z.zeroGrad();
            z.beginMicroStep(true);
            m.loss(ids(rank, 32, 37), ids(rank + 9, 32, 37), 4, 8).backward();
            z.finishGradients();
            z.step(1e-2f, 0f);
            // Optimizer state covers (about) a third of the parameters per rank, padding included, not all of them.
            assertThat(z.memory().optimizerBytes()).isLessThan(8L * flat.parameterCount() / 3 + 8L * 16 * 3 * z.plan().buckets().size());
            return new Owned(flat.data().clone(), z.optimizerState().shards());
        });
        java.util.Map<String, int[]> owners = new java.util.HashMap<>();
        // (m and v of the padding that rounds shards up are not checked: only owned ranges are stepped, and a zero
        // gradient leaves AdamW's moments at zero, so such a check could not fail)
        for (Owned r : ranks) {
            for (var t : r.shards()) {
                long numel = java.util.Arrays.stream(t.globalShape()).reduce(1, (a, b) -> a * b);
                int[] count = owners.computeIfAbsent(t.name(), k -> new int[(int) numel]);
                for (int i = 0; i < t.length(); i++) count[(int) t.globalOffset() + i]++;
            }
        }
        TinyLm reference = new TinyLm(37, 21, 1);
        for (var slot : FlatParameters.of(reference).slots())
            for (String kind : new String[] {"exp_avg", "exp_avg_sq"}) {
                int[] count = owners.get("optimizer." + kind + "." + slot.name());
                assertThat(count).as("%s of %s", kind, slot.name()).isNotNull().hasSize(slot.numel());
                for (int i = 0; i < count.length; i++) assertThat(count[i]).as("owners of %s[%d] of %s", kind, i, slot.name()).isEqualTo(1);
            }
        assertThat(ranks.get(1).params()).containsExactly(ranks.get(0).params());
        assertThat(ranks.get(2).params()).containsExactly(ranks.get(0).params());
    }


    /** Per-rank bytes against the ZeRO paper's formulas (fp32: 16, 8 + 8/N, 4 + 12/N B/param), within alignment padding. */
    @ParameterizedTest(name = "ZeRO stage {0}")
    @ValueSource(ints = {0, 1, 2})
    void memoryPerRankFollowsTheZeroFormulas(int stage) throws Exception {
        for (int world : new int[]{2, 4}) {
            List<MemoryReport> reports = LocalRanks.run(world, (rank, pg) -> {
                TinyLm m = new TinyLm(1000, 96, 1);
                FlatParameters flat = FlatParameters.of(m);
                return make(stage, flat, pg, null).memory();
            });
            for (MemoryReport r : reports)
                assertThat(r.bytesPerParameter()).as("world %d stage %d", world, stage)
                        .isCloseTo(MemoryReport.expectedBytesPerParameter(stage, world), within(0.02 * MemoryReport.expectedBytesPerParameter(stage, world)));
        }
    }

    @Test
    void differentModelsOnDifferentRanksFailClearlyEverywhere() {
        assertThatThrownBy(() -> LocalRanks.run(2, (rank, pg) -> {
            TinyLm m = new TinyLm(37, rank == 0 ? 21 : 22, 1);
            return new DistributedDataParallel(FlatParameters.of(m), pg, DataParallelOptions.defaults(), null);
        })).hasMessageContaining("parameter layouts differ across ranks").hasMessageContaining("rank 1");
    }
}
