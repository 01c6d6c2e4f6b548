package dev.jtrain.comm.bench;

import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroupOptions;
import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.transport.local.LocalTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

class CommBenchmarkTest {
    @Test
    void sizesParseLikeNcclTests() {
        assertThat(BenchConfig.parseSizes("4K:256M")).containsExactly(4096L, 16384L, 65536L, 262144L, 1L << 20, 4L << 20, 16L << 20, 64L << 20, 256L << 20);
        assertThat(BenchConfig.parseSizes("4K:16K:2")).containsExactly(4096L, 8192L, 16384L);
        assertThat(BenchConfig.parseSizes("4KiB,64M")).containsExactly(4096L, 64L << 20);
    }

    @Test
    @Timeout(60)
    void everyOpRunsChecksItselfAndReportsNcclTestsFigures() throws Exception {
        for (String op : BenchConfig.OPS) {
            List<BenchResult> results = runInProcess(3, new BenchConfig(op, List.of(4096L, 1L << 20), 3, 1));
            assertThat(results).hasSize(2);
            BenchResult r = results.get(1);
            assertThat(r.ranks()).isEqualTo(3);
            assertThat(r.medianUs()).isPositive();
            double factor = switch (op) {
                case "all_reduce" -> 4.0 / 3;
                case "broadcast" -> 1.0;
                default -> 2.0 / 3;
            };
            assertThat(r.busbwGBs()).isCloseTo(r.algbwGBs() * factor, org.assertj.core.data.Offset.offset(1e-9));
            assertThat(CommBenchmark.table(results)).contains(op).contains("busbw");
            assertThat(CommBenchmark.json(results)).contains("\"busbw_gbs\"");
        }
    }

    /**
     * 3 ranks as threads, told that ranks 0-1 share host "a" and rank 2 is on "b": a full matrix, every off-diagonal
     * cell a local link with a latency and a bandwidth, each rank labelled with its host and the boundary marked.
     */
    @Test
    @Timeout(60)
    void topologyPrintsTheRankMatrixWithMeasuredLinksAndHostBoundaries() throws Exception {
        int p = 3;
        AtomicReference<String> table = new AtomicReference<>();
        var hosts = dev.jtrain.comm.topology.HostTopology.of(new String[] {"a", "a", "b"}, new String[] {"a", "a", "b"});
        onRanks(p, hosts, (rank, g) -> {
            String s = Topology.measure(g, 50, 1 << 20, 2);
            if (rank == 0) table.set(s);
            else assertThat(s).isEmpty();
        });
        String[] lines = table.get().split("\n");
        assertThat(lines[0]).isEqualTo("hosts: a[0, 1], b[2]");
        assertThat(lines[1]).contains("rank 0", "rank 1", "rank 2 |");
        assertThat(lines[4]).matches("-+"); // between rank 1 (host a) and rank 2 (host b)
        for (int r = 0; r < p; r++) {
            String row = lines[2 + r + (r == 2 ? 1 : 0)];
            assertThat(row).startsWith("rank " + r + " " + (r < 2 ? "a" : "b")).contains("X");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("LOCAL ([0-9.]+)us ([0-9.]+)GB/s").matcher(row);
            int cells = 0;
            while (m.find()) {
                assertThat(Double.parseDouble(m.group(1))).isPositive();
                assertThat(Double.parseDouble(m.group(2))).isPositive();
                cells++;
            }
            assertThat(cells).as(row).isEqualTo(p - 1);
        }
    }

    static List<BenchResult> runInProcess(int p, BenchConfig c) throws Exception {
        AtomicReference<List<BenchResult>> out = new AtomicReference<>();
        onRanks(p, (rank, g) -> {
            List<BenchResult> res = CommBenchmark.run(g, c);
            if (rank == 0) out.set(res);
        });
        return out.get();
    }

    interface RankBody {
        void run(int rank, ProcessGroup g) throws Exception;
    }

    /** {@code p} ranks as threads over the in-process transport; rethrows the first failure. */
    static void onRanks(int p, RankBody body) throws Exception { onRanks(p, null, body); }

    static void onRanks(int p, dev.jtrain.comm.topology.HostTopology hosts, RankBody body) throws Exception {
        LocalTransport[] t = LocalTransport.createGroup(p, 20_000);
        AtomicReference<Throwable> err = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < p; r++) {
            int rank = r;
            threads.add(Thread.ofPlatform().start(() -> {
                var o = ProcessGroupOptions.defaults().withCostModel(CostModel.typicalSharedMemory(ProcessGroupOptions.DEFAULT_CHUNK_BYTES))
                        .withTopology(hosts);
                try (ProcessGroup g = ProcessGroup.create(t[rank], o)) {
                    body.run(rank, g);
                } catch (Throwable e) {
                    err.compareAndSet(null, e);
                }
            }));
        }
        for (Thread th : threads) th.join();
        if (err.get() != null) throw new AssertionError(err.get());
    }
}
