package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage;
import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage.Placement;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.store.StoreFrameDescriptor;
import dev.jtrain.comm.store.BulkStoreServer;
import dev.jtrain.comm.transport.local.LocalRanks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The in-memory tier over real holders (token-checked bulk stores, one per emulated node, as the launchers host
 * them): ranks as threads, each with its own connections as separate processes would have.
 */
@Timeout(120)
class PeerMemoryStorageTest {
    static final String TOKEN = "peer-memory-test-token";
    static final Path ROOT = Path.of("ram");
    private final List<BulkStoreServer> holders = new ArrayList<>();
    private final List<Path> shm = new ArrayList<>();
    @TempDir
    Path tmp;

    private List<String> startHolders(int nodes) throws Exception {
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            shm.add(Files.createDirectories(tmp.resolve("shm-" + holders.size())));
            BulkStoreServer s = new BulkStoreServer("127.0.0.1", 0, TOKEN, StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 10_000, 1L << 30,
                    shm.getLast());
            holders.add(s);
            addresses.add("127.0.0.1:" + s.port());
        }
        return addresses;
    }

    @AfterEach
    void stopHolders() {
        holders.forEach(BulkStoreServer::close);
    }

    /** {@code world} ranks, {@code perNode} to a node, each saving its layout with {@code salt} as step {@code salt}. */
    private void save(List<String> addresses, int world, int perNode, int salt, int keepLast) throws Exception {
        LocalRanks.run(world, (rank, pg) -> {
            try (PeerMemoryStorage st = PeerMemoryStorage.connect(addresses, rank / perNode, TOKEN, 10_000, null, Placement.BUDDY);
                 Checkpointer c = new Checkpointer(pg, CheckpointerOptions.defaults(), st)) {
                return c.save(ROOT, Map.of("state", DistributedCheckpointTest.layout(rank, world).fill(salt)),
                        new SaveOptions(salt, true, keepLast, false)).join();
            }
        });
    }

    /** What each rank's load gives: null when its state holds {@code salt}'s values bitwise, else the problem. */
    private List<String> load(List<String> addresses, int world, int perNode, int salt) throws Exception {
        return LocalRanks.run(world, (rank, pg) -> {
            ArrayState s = DistributedCheckpointTest.layout(rank, world).fill(99);
            try (PeerMemoryStorage st = PeerMemoryStorage.connect(addresses, rank / perNode, TOKEN, 10_000, null, Placement.BUDDY);
                 Checkpointer c = new Checkpointer(pg, CheckpointerOptions.defaults(), st)) {
                try {
                    LoadReport r = c.load(ROOT, Map.of("state", s), LoadOptions.newestValid().withBroadcast(true));
                    if (r.step() != salt) return "rank " + rank + " loaded step " + r.step();
                } catch (CheckpointException e) {
                    String untouched = s.check(99);
                    return "failed: " + e.getMessage() + (untouched == null ? " [state untouched]" : " [state CHANGED: " + untouched + "]");
                }
            }
            return s.check(salt);
        });
    }

    @Test
    void savesLoadBitwiseAndOldStepsLeaveTheHoldersMemory() throws Exception {
        List<String> at = startHolders(2);
        save(at, 4, 2, 1, 2);
        long keysAfterOne;
        try (PeerMemoryStorage st = PeerMemoryStorage.connect(at, 0, TOKEN, 10_000, null, Placement.BUDDY)) {
            keysAfterOne = st.keysOn(0);
            assertThat(st.keysOn(1)).as("with two nodes each holds every shard: its own and its buddy's").isEqualTo(keysAfterOne);
        }
        save(at, 4, 2, 2, 2);
        save(at, 4, 2, 3, 2);
        try (PeerMemoryStorage st = PeerMemoryStorage.connect(at, 0, TOKEN, 10_000, null, Placement.BUDDY)) {
            assertThat(st.committedSteps(ROOT)).containsExactly(ROOT.resolve("step-000002"), ROOT.resolve("step-000003"));
            assertThat(st.keysOn(0)).as("step 1 dropped, two steps held").isEqualTo(2 * keysAfterOne - 1); // one shared step list
        }
        assertThat(load(at, 4, 2, 3)).containsOnlyNulls();
        assertThat(load(at, 3, 3, 3)).as("resharded to 3 ranks on one node").containsOnlyNulls();
    }

    @Test
    void aLostNodeLosesNothingItsBuddyHolds() throws Exception {
        List<String> at = startHolders(2);
        save(at, 4, 2, 5, 2);
        holders.get(1).close(); // node 1 died with its launcher: what it held is gone
        assertThat(load(at, 4, 2, 5)).as("every shard of node 1 is also on node 0").containsOnlyNulls();
    }

    @Test
    void aNodeLostWithItsBuddyFailsTheLoadNamingTheShardAndLeavesTheStateAlone() throws Exception {
        List<String> at = startHolders(3);
        save(at, 3, 1, 7, 2);
        holders.get(1).close();
        holders.get(2).close(); // rank 1's shard was on node 1 and its buddy node 2
        List<String> outcomes = load(at, 3, 1, 7);
        for (String o : outcomes)
            assertThat(o).contains("failed", "rank-00001", "in no live node's memory", "node 1", "node 2", "[state untouched]");
    }

    /**
     * Each node's copy over its own ranks (OWN_NODE, state whole on every node: here sharded within the node and
     * replicated across nodes, as hybrid sharding has it): a node's shards go into its own holder only, through its
     * shared-memory directory; any surviving node's copy restores every rank.
     */
    /** Per node, the bytes its ranks' loads in {@link #perNode} mapped from their own holder's files. */
    private final Map<Integer, Long> mapped = new java.util.concurrent.ConcurrentHashMap<>();

    private List<String> perNode(List<String> at, int nodes, int perNode, int salt, boolean save) throws Exception {
        return LocalRanks.run(nodes * perNode, (rank, pg) -> {
            int node = rank / perNode, local = rank % perNode;
            ProcessGroup mine = null;
            for (int n = 0; n < nodes; n++) {
                int[] ranks = new int[perNode];
                for (int i = 0; i < perNode; i++) ranks[i] = n * perNode + i;
                var g = pg.newGroup(ranks);
                if (n == node) mine = g.orElseThrow();
            }
            ArrayState s = DistributedCheckpointTest.layout(local, perNode).fill(save ? salt : 99);
            try (PeerMemoryStorage st = PeerMemoryStorage.connect(at, node, TOKEN, 10_000, shm.get(node), Placement.OWN_NODE);
                 Checkpointer c = new Checkpointer(mine, CheckpointerOptions.defaults(), st)) {
                if (save) {
                    c.save(ROOT, Map.of("state", s), new SaveOptions(salt, true, 2, false)).join();
                    return null;
                }
                try {
                    LoadReport r = c.load(ROOT, Map.of("state", s), LoadOptions.newestValid().withBroadcast(true));
                    if (r.step() != salt) return "rank " + rank + " loaded step " + r.step();
                } catch (CheckpointException e) {
                    return "failed: " + e.getMessage();
                } finally {
                    mapped.merge(node, st.bytesMapped(), Long::sum);
                }
            }
            return s.check(salt);
        });
    }

    @Test
    void eachNodeKeepsAWholeCopyInItsOwnMemoryWrittenThroughSharedMemoryAndAnySurvivorRestoresAll() throws Exception {
        List<String> at = startHolders(2);
        perNode(at, 2, 2, 4, true);
        for (int n = 0; n < 2; n++) {
            assertThat(holders.get(n).adoptedBytes()).as("node %d's chunks came through shared memory, not its socket", n)
                    .isGreaterThan(0);
            try (var files = Files.list(shm.get(n))) {
                assertThat(files.count()).as("one file per chunk held, nothing else").isEqualTo(chunksHeld(n));
            }
        }
        assertThat(holders.get(0).heldBytes()).as("the same whole copy on each node").isEqualTo(holders.get(1).heldBytes());
        holders.get(1).close(); // node 1 died with its launcher
        mapped.clear();
        assertThat(perNode(at, 2, 2, 4, false)).as("node 1's restarted ranks load node 0's copy").containsOnlyNulls();
        assertThat(mapped.get(0)).as("node 0's ranks map their own holder's chunk files").isPositive();
        assertThat(mapped.get(1)).as("node 1's ranks fetch node 0's copy through its socket").isZero();
    }

    /** Chunk values node {@code n}'s holder holds: its keys but the small ones (sizes, shard lists, metadata, steps). */
    private long chunksHeld(int n) throws Exception {
        try (var store = dev.jtrain.comm.store.TcpStore.create(dev.jtrain.comm.store.TcpStoreOptions.client("127.0.0.1",
                holders.get(n).port(), TOKEN, 10_000))) {
            long chunks = 0;
            for (int rank = 0; rank < 2; rank++)
                for (int i = 0; ; i++) {
                    try {
                        store.get("ram/step-000004/rank-0000" + rank + ".safetensors#" + i, 0);
                        chunks++;
                    } catch (dev.jtrain.comm.CommTimeoutException absent) {
                        break;
                    }
                }
            return chunks;
        }
    }

    /**
     * OWN_NODE: a step another node committed in its own copy is loadable from here, but does not count as committed
     * where this node saves: else this node's ranks, some seeing it and some not yet, would split on their own save.
     */
    @Test
    void anotherNodesCopyIsLoadableButDoesNotStopThisNodeSavingItsOwn() throws Exception {
        List<String> at = startHolders(2);
        Path step = ROOT.resolve("step-000008");
        try (PeerMemoryStorage node0 = PeerMemoryStorage.connect(at, 0, TOKEN, 10_000, shm.get(0), Placement.OWN_NODE);
             PeerMemoryStorage node1 = PeerMemoryStorage.connect(at, 1, TOKEN, 10_000, shm.get(1), Placement.OWN_NODE)) {
            node1.commit(ROOT, step, "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            assertThat(node1.isCommitted(step)).isTrue();
            assertThat(node0.isCommitted(step)).as("not in node 0's own copy").isFalse();
            assertThat(node0.committedSteps(ROOT)).as("but node 0 can load it").containsExactly(step);
            assertThat(node0.keysOn(0)).as("node 1's commit wrote nothing into node 0's memory").isZero();
        }
    }
}
