package dev.jtrain.comm.algo;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Picks the algorithm for each call: the forced one if {@code JTRAIN_ALGO} (like {@code NCCL_ALGO}) or the options
 * name one for that collective, else the candidate with the lowest {@link Algorithm#predictSeconds} under the
 * group's {@link CostModel}. Every rank holds the same model (rank 0's measurement is broadcast at group start), so
 * every rank picks the same algorithm for the same call.
 *
 * <p>Threading: immutable after construction.
 */
public final class AlgorithmSelector {
    private static final Logger LOG = LoggerFactory.getLogger(AlgorithmSelector.class);

    /** Every algorithm, by collective; the first of each list is the default when nothing can be predicted. */
    public static final Map<Collective, List<Algorithm>> ALL = registry();

    private final Map<Collective, Algorithm> forced;

    /** @param forced collective → algorithm name, e.g. parsed by {@link #parse} */
    public AlgorithmSelector(Map<Collective, String> forced) {
        this.forced = new EnumMap<>(Collective.class);
        forced.forEach((c, name) -> this.forced.put(c, byName(c, name)));
    }

    /** Parses {@code "allreduce:ring,broadcast:chain"}; blank gives an empty map. */
    public static Map<Collective, String> parse(String spec) {
        Map<Collective, String> out = new EnumMap<>(Collective.class);
        if (spec == null || spec.isBlank()) return out;
        for (String part : spec.split(",")) {
            String[] kv = part.split(":");
            if (kv.length != 2) {
                throw new IllegalArgumentException("JTRAIN_ALGO entry must be collective:algorithm, got '" + part
                        + "' in '" + spec + "' (e.g. allreduce:ring,broadcast:chain)");
            }
            Collective c = Collective.fromEnvName(kv[0]);
            out.put(c, byName(c, kv[1]).name());
        }
        return out;
    }

    /** The algorithm named {@code name} for {@code c} (a few aliases accepted: hd, rabenseifner, dbt, rd, rh). */
    public static Algorithm byName(Collective c, String name) {
        String n = switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "hd", "rabenseifner", "halving_doubling", "halving-doubling" -> "halvingdoubling";
            case "dbt", "double_tree", "double-tree", "doublebinarytree" -> "doubletree";
            case "rd", "recursive_doubling" -> "recursivedoubling";
            case "rh", "recursive_halving" -> "recursivehalving";
            case "binomial_tree", "binomialtree" -> "tree";
            case "hier", "2d", "two_level", "two-level" -> "hierarchical";
            case String s -> s;
        };
        for (Algorithm a : ALL.get(c)) if (a.name().equals(n)) return a;
        List<String> names = new ArrayList<>();
        for (Algorithm a : ALL.get(c)) names.add(a.name());
        throw new IllegalArgumentException("unknown " + c.envName() + " algorithm '" + name + "'; known: " + names);
    }

    /** The algorithm for {@code c} with {@code p} ranks on one host and {@code bytes} (see {@link Algorithm#predictSeconds}). */
    public Algorithm select(Collective c, int p, long bytes, CostModel model) {
        return select(c, p, bytes, model == null ? null : Fabric.singleHost(p, model));
    }

    /** The algorithm for {@code c} with {@code p} ranks laid out on {@code fabric}'s hosts, and {@code bytes}. */
    public Algorithm select(Collective c, int p, long bytes, Fabric model) {
        Algorithm f = forced.get(c);
        if (f != null) return f;
        List<Algorithm> candidates = ALL.get(c);
        Algorithm best = candidates.getFirst();
        if (model != null && candidates.size() > 1) {
            double bestT = Double.MAX_VALUE;
            for (Algorithm a : candidates) {
                if (!a.chosenByCost()) continue;
                double t = a.predictSeconds(model, p, bytes);
                if (t < bestT) {
                    bestT = t;
                    best = a;
                }
            }
            if (LOG.isDebugEnabled()) {
                LOG.debug("{} p={} bytes={}: chose {} (predicted {} us) under {}", c.apiName(), p, bytes, best.name(),
                        String.format(Locale.ROOT, "%.1f", bestT * 1e6), model);
            }
        }
        return best;
    }

    private static Map<Collective, List<Algorithm>> registry() {
        Map<Collective, List<Algorithm>> m = new EnumMap<>(Collective.class);
        m.put(Collective.ALL_REDUCE, List.of(RingAllReduce.INSTANCE, HierarchicalAllReduce.INSTANCE, HalvingDoublingAllReduce.INSTANCE,
                DoubleBinaryTreeAllReduce.INSTANCE, BinomialTreeAllReduce.INSTANCE, RecursiveDoublingAllReduce.INSTANCE,
                OrderedAllReduce.INSTANCE, NaiveAllReduce.INSTANCE));
        m.put(Collective.BROADCAST, List.of(BinomialBroadcast.INSTANCE, ChainBroadcast.INSTANCE));
        m.put(Collective.REDUCE, List.of(BinomialReduce.INSTANCE));
        m.put(Collective.ALL_GATHER, List.of(RingAllGather.INSTANCE, HierarchicalAllGather.INSTANCE, RecursiveDoublingAllGather.INSTANCE));
        m.put(Collective.REDUCE_SCATTER, List.of(RingReduceScatter.INSTANCE, HierarchicalReduceScatter.INSTANCE,
                RecursiveHalvingReduceScatter.INSTANCE));
        m.put(Collective.GATHER, List.of(LinearGather.INSTANCE, BinomialGather.INSTANCE));
        m.put(Collective.SCATTER, List.of(LinearScatter.INSTANCE, BinomialScatter.INSTANCE));
        m.put(Collective.ALL_TO_ALL, List.of(PairwiseAllToAll.INSTANCE));
        m.put(Collective.BARRIER, List.of(DisseminationBarrier.INSTANCE));
        return m;
    }
}
