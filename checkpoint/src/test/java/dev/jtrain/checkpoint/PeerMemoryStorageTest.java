package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage;
import dev.jtrain.comm.store.StoreFrameDescriptor;
import dev.jtrain.comm.store.BulkStoreServer;
import dev.jtrain.comm.transport.local.LocalRanks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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

    private List<String> startHolders(int nodes) {
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            BulkStoreServer s = new BulkStoreServer("127.0.0.1", 0, TOKEN, StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 10_000, 1L << 30);
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
            try (PeerMemoryStorage st = PeerMemoryStorage.connect(addresses, rank / perNode, TOKEN, 10_000);
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
            try (PeerMemoryStorage st = PeerMemoryStorage.connect(addresses, rank / perNode, TOKEN, 10_000);
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
        try (PeerMemoryStorage st = PeerMemoryStorage.connect(at, 0, TOKEN, 10_000)) {
            keysAfterOne = st.keysOn(0);
            assertThat(st.keysOn(1)).as("with two nodes each holds every shard: its own and its buddy's").isEqualTo(keysAfterOne);
        }
        save(at, 4, 2, 2, 2);
        save(at, 4, 2, 3, 2);
        try (PeerMemoryStorage st = PeerMemoryStorage.connect(at, 0, TOKEN, 10_000)) {
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
}
