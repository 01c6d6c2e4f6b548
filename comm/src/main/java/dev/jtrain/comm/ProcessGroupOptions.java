package dev.jtrain.comm;

import dev.jtrain.comm.algo.AlgorithmSelector;
import dev.jtrain.comm.algo.Collective;
import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.algo.CostModelProbe.LinkCosts;
import dev.jtrain.comm.topology.HostTopology;

import java.util.EnumMap;
import java.util.Map;

/**
 * Settings of a {@link ProcessGroup}, resolved once at creation (and inherited by sub-groups).
 *
 * @param timeoutMs   per-operation timeout; 0 means the transport's {@code timeoutMs()}
 * @param debugDetail the checks of {@code JTRAIN_DEBUG=DETAIL}: collective fingerprints exchanged before each
 *                    collective (mismatches reported with both sides) and buffer checksums of small buffers
 * @param algorithms  forced algorithm per collective (like {@code NCCL_ALGO}); others are chosen by cost
 * @param chunkBytes  message size algorithms cut large transfers into (pipelining; bounded scratch); 0 = auto:
 *                    {@link #DEFAULT_CHUNK_BYTES}, or {@link #OVERSUBSCRIBED_CHUNK_BYTES} when rank 0 sees more
 *                    ranks on its host than cores (each chunk is a rendezvous of the ranks, and a descheduled rank
 *                    makes every rendezvous slow). Rank 0's choice is broadcast, as chunk boundaries must agree.
 * @param costModel   the α-β-γ figures to select with; null means measure them per link class at group start
 * @param topology    which ranks share a host; null means exchange host identities at group start (with both this
 *                    and a cost model given, creating a group sends nothing)
 * @param linkCosts   figures per link class, given ({@code JTRAIN_LINK_COSTS}) or measured by an earlier start of
 *                    this job ({@link LinkCostCache}): used instead of measuring when they cover the link classes
 *                    the group has; null means measure. Rank 0's value counts, handed to every rank at group
 *                    start (the choice to measure is collective). A cost model wins.
 */
public record ProcessGroupOptions(long timeoutMs, boolean debugDetail, Map<Collective, String> algorithms,
                                  long chunkBytes, CostModel costModel, HostTopology topology, LinkCosts linkCosts) {
    /**
     * Large on purpose: every chunk is one transport call, i.e. one rendezvous of two ranks, and on small machines
     * that call overhead outweighs keeping the reduced chunk in cache (figures: bench/MEASUREMENTS.md, "chunk
     * size"). Pipelined algorithms (chain, double tree) pipeline only beyond this size.
     */
    public static final long DEFAULT_CHUNK_BYTES = 32L << 20;
    public static final long OVERSUBSCRIBED_CHUNK_BYTES = 64L << 20;

    public ProcessGroupOptions {
        if (timeoutMs < 0) throw new IllegalArgumentException("timeoutMs must be >= 0: timeoutMs=" + timeoutMs);
        if (chunkBytes != 0 && chunkBytes < 4096) throw new IllegalArgumentException("chunkBytes must be 0 (auto) or >= 4096: chunkBytes=" + chunkBytes);
        algorithms = Map.copyOf(algorithms);
        // validate names now, not at the first collective
        algorithms.forEach(AlgorithmSelector::byName);
    }

    /** Defaults, ignoring the environment. */
    public static ProcessGroupOptions defaults() {
        return new ProcessGroupOptions(0, false, Map.of(), 0, null, null, null);
    }

    /**
     * Defaults overridden by {@code JTRAIN_DEBUG=DETAIL}, {@code JTRAIN_ALGO=allreduce:ring,...},
     * {@code JTRAIN_CHUNK_BYTES}, {@code JTRAIN_COMM_TIMEOUT_MS} and {@code JTRAIN_LINK_COSTS} (link figures as a
     * run prints them, {@link LinkCosts#parse}: the group starts without measuring, and selects the same algorithms
     * at every start, as {@code NCCL_ALGO}-style pinning does for one collective).
     */
    public static ProcessGroupOptions fromEnv() { return fromEnv(System.getenv()); }

    static ProcessGroupOptions fromEnv(Map<String, String> env) {
        ProcessGroupOptions o = defaults();
        String dbg = env.getOrDefault("JTRAIN_DEBUG", "");
        if (dbg.equalsIgnoreCase("DETAIL")) o = o.withDebugDetail(true);
        else if (!dbg.isBlank() && !dbg.equalsIgnoreCase("OFF")) {
            throw new IllegalArgumentException("JTRAIN_DEBUG must be DETAIL or OFF: JTRAIN_DEBUG=" + dbg);
        }
        o = new ProcessGroupOptions(o.timeoutMs, o.debugDetail, AlgorithmSelector.parse(env.get("JTRAIN_ALGO")),
                o.chunkBytes, o.costModel, o.topology, o.linkCosts);
        if (env.containsKey("JTRAIN_CHUNK_BYTES")) o = o.withChunkBytes(parseLong(env, "JTRAIN_CHUNK_BYTES"));
        if (env.containsKey("JTRAIN_COMM_TIMEOUT_MS")) o = o.withTimeoutMs(parseLong(env, "JTRAIN_COMM_TIMEOUT_MS"));
        String pinned = env.get("JTRAIN_LINK_COSTS");
        if (pinned != null && !pinned.isBlank()) {
            try {
                o = o.withLinkCosts(LinkCosts.parse(pinned));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("JTRAIN_LINK_COSTS: " + e.getMessage(), e);
            }
        }
        return o;
    }

    public ProcessGroupOptions withTimeoutMs(long v) { return new ProcessGroupOptions(v, debugDetail, algorithms, chunkBytes, costModel, topology, linkCosts); }

    public ProcessGroupOptions withDebugDetail(boolean v) { return new ProcessGroupOptions(timeoutMs, v, algorithms, chunkBytes, costModel, topology, linkCosts); }

    public ProcessGroupOptions withChunkBytes(long v) { return new ProcessGroupOptions(timeoutMs, debugDetail, algorithms, v, costModel, topology, linkCosts); }

    public ProcessGroupOptions withCostModel(CostModel v) { return new ProcessGroupOptions(timeoutMs, debugDetail, algorithms, chunkBytes, v, topology, linkCosts); }

    public ProcessGroupOptions withTopology(HostTopology v) { return new ProcessGroupOptions(timeoutMs, debugDetail, algorithms, chunkBytes, costModel, v, linkCosts); }

    public ProcessGroupOptions withLinkCosts(LinkCosts v) { return new ProcessGroupOptions(timeoutMs, debugDetail, algorithms, chunkBytes, costModel, topology, v); }

    /** Forces {@code algorithm} for {@code collective}. */
    public ProcessGroupOptions withAlgorithm(Collective collective, String algorithm) {
        Map<Collective, String> m = new EnumMap<>(Collective.class);
        m.putAll(algorithms);
        m.put(collective, algorithm);
        return new ProcessGroupOptions(timeoutMs, debugDetail, m, chunkBytes, costModel, topology, linkCosts);
    }

    private static long parseLong(Map<String, String> env, String key) {
        try {
            return Long.parseLong(env.get(key).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be an integer: " + key + "=" + env.get(key), e);
        }
    }
}
