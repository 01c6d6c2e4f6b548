package dev.jtrain.checkpoint.storage.memory;

import dev.jtrain.checkpoint.storage.CheckpointStorage;
import dev.jtrain.checkpoint.storage.ShardSink;
import dev.jtrain.checkpoint.storage.ShardSource;
import dev.jtrain.comm.JTrainCommException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.store.TcpStore;
import dev.jtrain.comm.store.TcpStoreOptions;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checkpoints in the RAM of the job's nodes, the second storage tier (Gemini, SOSP '23: checkpoints in CPU memory of
 * the local node and of a peer, recovery from there instead of from remote storage). Each node's launcher holds a
 * key-value store in its memory; the launcher survives the ranks it restarts, so a restarted group finds the state
 * its predecessors left there.
 *
 * <p>Placement ({@link Placement}): with {@code BUDDY}, a rank's shard goes to its own node's holder and to its
 * buddy, the next node in order (replicas on two nodes, so losing any one node loses no shard). With {@code OWN_NODE}
 * it goes to its own node's holder only: for state every node holds whole (data parallelism, or sharding within a
 * host), where each node's ranks save a complete copy into their own node's memory (a checkpointer over the node's
 * ranks). Then no checkpoint byte crosses the network, a node that fails mid-save cannot stall another's save, and
 * the copy of any surviving node restores the job. Either way a step whose shards were all on lost holders (a node
 * died together with its buddy; every node died) cannot be loaded from here; the loader names the shard and the
 * holders it was on, and the caller falls back to disk. Reads look at this node's holder first, then the others.
 *
 * <p>The same rules as on disk hold: a shard is visible only once published whole (its size key is written last), a
 * step is committed when its metadata is on the holders (written by the coordinator after every rank published),
 * and the loader checks each piece's CRC32C. Keys, under the step's name ({@code ram/step-000010}):
 * {@code <shard>#<i>} chunk i, {@code <shard>#size} the published size, {@code shards#n} / {@code shards#<k>} the
 * shards a holder has for the step (for retention), {@code metadata}; and {@code <root>/steps}, the committed steps.
 *
 * <p>Threading: safe for concurrent calls on different shards.
 */
public final class PeerMemoryStorage implements CheckpointStorage, AutoCloseable {
    /** Where a rank's shards go: its node's holder and the next node's, or its node's only (see the class comment). */
    public enum Placement { BUDDY, OWN_NODE }


    /** Chunk of a shard per store value: well inside the store's frame limit, large enough to stream at link speed. */
    static final int CHUNK_BYTES = 8 << 20;
    private static final Pattern STEP = Pattern.compile("step-(\\d+)");

    private final List<MemoryHolder> holders;
    private final AtomicLong bytesMapped = new AtomicLong();
    private final int localNode;
    private final Placement placement;

    /**
     * @param holders   every node's holder, by node index
     * @param localNode this process's node: its shards go to this holder and the next one
     */
    PeerMemoryStorage(List<MemoryHolder> holders, int localNode, Placement placement) {
        if (holders.isEmpty()) throw new IllegalArgumentException("no checkpoint memory holders");
        if (localNode < 0 || localNode >= holders.size())
            throw new IllegalArgumentException("node " + localNode + " is not one of the " + holders.size() + " holders");
        this.holders = List.copyOf(holders);
        this.localNode = localNode;
        this.placement = placement;
    }

    /** Over stores already open (in-process tests, or stores the caller manages), one per node. */
    public static PeerMemoryStorage over(List<? extends Store> stores, int localNode) {
        List<MemoryHolder> hs = new ArrayList<>();
        for (int i = 0; i < stores.size(); i++) {
            Store s = stores.get(i);
            hs.add(new MemoryHolder(i, "in-process", () -> s));
        }
        return new PeerMemoryStorage(hs, localNode, Placement.BUDDY);
    }

    /**
     * Over the launchers' holders at {@code addresses} ("host:port", by node), reached with the job token; each is
     * connected on first use. {@code sharedMemory} is this node's launcher's adoption directory, or null.
     */
    public static PeerMemoryStorage connect(List<String> addresses, int localNode, String token, long timeoutMs,
                                            Path sharedMemory, Placement placement) {
        List<MemoryHolder> hs = new ArrayList<>();
        for (int i = 0; i < addresses.size(); i++) {
            String a = addresses.get(i);
            int colon = a.lastIndexOf(':');
            if (colon <= 0) throw new IllegalArgumentException("checkpoint holder address must be host:port, got '" + a + "'");
            String host = a.substring(0, colon);
            int port = Integer.parseInt(a.substring(colon + 1));
            Supplier<Store> c = () -> {
                probe(host, port);
                return TcpStore.create(TcpStoreOptions.client(host, port, token, timeoutMs));
            };
            hs.add(new MemoryHolder(i, a, c, i == localNode ? sharedMemory : null));
        }
        return new PeerMemoryStorage(hs, localNode, placement);
    }

    /**
     * One connection attempt: a holder is up before its launcher starts any rank, so one that refuses is lost, and
     * the store client's retrying until its timeout (meant for a rendezvous whose server is still starting) would
     * only delay the fallback.
     */
    private static void probe(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), PROBE_TIMEOUT_MS);
        } catch (IOException e) {
            throw new JTrainCommException("checkpoint memory holder " + host + ":" + port + " is unreachable: " + e.getMessage(), e);
        }
    }

    private static final int PROBE_TIMEOUT_MS = 3_000;

    /** Where this process's shards go: its own node's holder first, then (BUDDY) its buddy's. */
    List<MemoryHolder> replicasOf(int node) {
        Set<MemoryHolder> r = new LinkedHashSet<>();
        r.add(holders.get(node));
        if (placement == Placement.BUDDY) r.add(holders.get((node + 1) % holders.size()));
        return List.copyOf(r);
    }

    /** Holders a commit or a drop writes: all (BUDDY: shards are spread), or this node's (OWN_NODE: its own copy). */
    private List<MemoryHolder> writtenHolders() {
        return placement == Placement.BUDDY ? holders : List.of(holders.get(localNode));
    }

    /** Holders to read from, nearest first (this node, then the others in order). */
    private List<MemoryHolder> readOrder() {
        List<MemoryHolder> out = new ArrayList<>();
        for (int i = 0; i < holders.size(); i++) out.add(holders.get((localNode + i) % holders.size()));
        return out;
    }

    static String key(Path stepDir, String what) { return stepDir + "/" + what; }

    @Override
    public Path stepDir(Path root, long step) { return root.resolve(String.format("step-%06d", step)); }

    @Override
    public OptionalLong stepOf(Path stepDir) {
        Matcher m = STEP.matcher(stepDir.getFileName().toString());
        return m.matches() ? OptionalLong.of(Long.parseLong(m.group(1))) : OptionalLong.empty();
    }

    /**
     * Committed where this process's saves go: on any live holder (BUDDY: every holder gets each commit), or on this
     * node's (OWN_NODE). Another node's copy of the same step, committed a moment earlier, must not make this node's
     * ranks refuse to save theirs, and some of them see it and some not.
     */
    @Override
    public boolean isCommitted(Path stepDir) {
        return placement == Placement.OWN_NODE ? committedOn(holders.get(localNode), stepDir) : metadataHolder(stepDir).isPresent();
    }

    private static boolean committedOn(MemoryHolder h, Path stepDir) {
        if (h.lost()) return false;
        try {
            return h.find(key(stepDir, "metadata")).isPresent();
        } catch (JTrainCommException lost) {
            return false;
        }
    }

    private Optional<byte[]> metadataHolder(Path stepDir) {
        for (MemoryHolder h : readOrder()) {
            if (h.lost()) continue;
            try {
                Optional<byte[]> m = h.find(key(stepDir, "metadata"));
                if (m.isPresent()) return m;
            } catch (JTrainCommException lost) {
                // next holder
            }
        }
        return Optional.empty();
    }

    @Override
    public Path resolve(Path root, long step) throws IOException {
        if (stepOf(root).isPresent()) return root;
        if (step >= 0) return stepDir(root, step);
        List<Path> all = committedSteps(root);
        if (all.isEmpty()) throw new NoSuchFileException(root.toString(), null, "no committed checkpoint in the nodes' memory" + lostNote());
        return all.getLast();
    }

    @Override
    public List<Path> committedSteps(Path root) {
        TreeSet<Long> steps = new TreeSet<>();
        for (MemoryHolder h : holders) {
            if (h.lost()) continue;
            try {
                h.find(key(root, "steps")).ifPresent(b -> steps.addAll(parseSteps(b)));
            } catch (JTrainCommException lost) {
                // its list is gone with it; the others list what they hold
            }
        }
        List<Path> out = new ArrayList<>();
        for (long s : steps) if (metadataHolder(stepDir(root, s)).isPresent()) out.add(stepDir(root, s)); // anywhere: loadable
        return out;
    }

    private static List<Long> parseSteps(byte[] b) {
        List<Long> out = new ArrayList<>();
        for (String line : new String(b, StandardCharsets.UTF_8).split("\n")) if (!line.isBlank()) out.add(Long.parseLong(line.strip()));
        return out;
    }

    private static byte[] formatSteps(Iterable<Long> steps) {
        StringBuilder sb = new StringBuilder();
        for (long s : steps) sb.append(s).append('\n');
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] readMetadata(Path stepDir) throws IOException {
        return metadataHolder(stepDir).orElseThrow(() -> new NoSuchFileException(key(stepDir, "metadata"), null,
                "not in any live node's memory" + lostNote()));
    }

    /** " (lost: node 1 (...): why)" for the holders this process found lost, or "". */
    String lostNote() {
        List<String> lost = holders.stream().filter(MemoryHolder::lost).map(h -> h.describe() + ": " + h.lostBecause()).toList();
        return lost.isEmpty() ? "" : " (lost holders: " + String.join("; ", lost) + ")";
    }

    @Override
    public ShardSink createShard(Path stepDir, String name, boolean direct) throws IOException {
        return new MemoryShardSink(stepDir, name, replicasOf(localNode));
    }

    @Override
    public ShardSource openShard(Path stepDir, String name, boolean direct) throws IOException {
        List<String> tried = new ArrayList<>();
        for (MemoryHolder h : readOrder()) {
            if (h.lost()) {
                tried.add(h.describe() + " lost");
                continue;
            }
            try {
                Optional<byte[]> size = h.find(key(stepDir, name + "#size"));
                if (size.isPresent()) return new MemoryShardSource(h, stepDir, name, Long.parseLong(new String(size.get(), StandardCharsets.US_ASCII)), bytesMapped);
                tried.add(h.describe() + " does not hold it");
            } catch (JTrainCommException e) {
                tried.add(h.describe() + " lost (" + e.getMessage() + ")");
            }
        }
        throw new NoSuchFileException(key(stepDir, name), null, "shard is in no live node's memory: its node and its buddy"
                + " were both lost (" + String.join("; ", tried) + ")");
    }

    /** Publishing put each shard on its replicas already; memory has nothing more to make durable. */
    @Override
    public void syncStep(Path stepDir) {}

    @Override
    public void commit(Path root, Path stepDir, byte[] metadata) throws IOException {
        long step = stepOf(stepDir).orElseThrow();
        int wrote = 0;
        List<String> failed = new ArrayList<>();
        for (MemoryHolder h : writtenHolders()) {
            if (h.lost()) continue;
            try {
                h.set(key(stepDir, "metadata"), metadata);
                TreeSet<Long> steps = new TreeSet<>(h.find(key(root, "steps")).map(PeerMemoryStorage::parseSteps).orElse(List.of()));
                steps.add(step);
                h.set(key(root, "steps"), formatSteps(steps));
                wrote++;
            } catch (JTrainCommException e) {
                failed.add(h.describe() + ": " + e.getMessage());
            }
        }
        if (wrote == 0) throw new IOException("cannot commit " + stepDir + " to any node's memory: " + String.join("; ", failed));
    }

    /** Memory is not kept for inspection: the step is dropped from every holder. */
    @Override
    public Path setAside(Path root, Path stepDir, Path replacement) throws IOException {
        drop(root, stepDir);
        return stepDir.resolveSibling(stepDir.getFileName() + ".dropped");
    }

    @Override
    public List<Path> retain(Path root, int keepLast, Path newest) throws IOException {
        int keep = keepLast <= 0 ? 2 : keepLast; // memory is bounded: never keep all
        long newestStep = stepOf(newest).orElseThrow();
        List<Path> committed = committedSteps(root).stream().filter(p -> stepOf(p).getAsLong() <= newestStep)
                .sorted(Comparator.comparingLong(p -> stepOf(p).getAsLong())).toList();
        List<Path> doomed = new ArrayList<>();
        for (int i = 0; i < committed.size() - keep; i++) if (!committed.get(i).equals(newest)) doomed.add(committed.get(i));
        for (Path p : doomed) drop(root, p);
        return doomed;
    }

    /** Removes a step from every live holder it was written to: off the list and its metadata first (no longer committed), then its chunks. */
    private void drop(Path root, Path stepDir) {
        long step = stepOf(stepDir).orElseThrow();
        for (MemoryHolder h : writtenHolders()) {
            if (h.lost()) continue;
            try {
                TreeSet<Long> steps = new TreeSet<>(h.find(key(root, "steps")).map(PeerMemoryStorage::parseSteps).orElse(List.of()));
                if (steps.remove(step)) h.set(key(root, "steps"), formatSteps(steps));
                h.delete(key(stepDir, "metadata"));
                long n = h.find(key(stepDir, "shards#n")).map(b -> Long.parseLong(new String(b, StandardCharsets.US_ASCII))).orElse(0L);
                for (long k = 1; k <= n; k++) {
                    Optional<byte[]> name = h.find(key(stepDir, "shards#" + k));
                    if (name.isPresent()) MemoryShardSink.deleteShard(h, stepDir, new String(name.get(), StandardCharsets.UTF_8));
                    h.delete(key(stepDir, "shards#" + k));
                }
                h.delete(key(stepDir, "shards#n"));
            } catch (JTrainCommException lost) {
                // what it held is gone with it
            }
        }
    }

    /** Keys held by node {@code node}'s holder. */
    public long keysOn(int node) { return holders.get(node).keys(); }

    /** Bytes this process read by mapping its own node's holder's files, rather than receiving them through a socket. */
    public long bytesMapped() { return bytesMapped.get(); }

    @Override
    public void close() { holders.forEach(MemoryHolder::close); }
}
