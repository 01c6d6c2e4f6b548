package dev.jtrain.spark;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns what the tasks of a barrier stage know about each other into the rendezvous variables jtrain reads
 * ({@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code JTRAIN_NODE_RANK}, {@code JTRAIN_NNODES},
 * {@code MASTER_ADDR}, {@code MASTER_PORT}). The task with partition id 0 is rank 0 and hosts the store; ranks on one
 * executor host are numbered in rank order, hosts in the order of their lowest rank, the way PySpark's
 * TorchDistributor and XGBoost4J-Spark derive a torchrun/Rabit layout from {@code BarrierTaskContext}.
 *
 * <p>Pure and serializable-free: unit-tested without Spark.
 */
public final class RankEnv {
    private RankEnv() { }

    /**
     * @param rank      this task's partition id
     * @param hosts     executor host of every task, by partition id (from {@code getTaskInfos()[i].address()})
     * @param storePort the port rank 0 chose for the store and shared through {@code allGather}
     */
    public static Map<String, String> of(int rank, List<String> hosts, int storePort) {
        int world = hosts.size();
        if (rank < 0 || rank >= world) throw new IllegalArgumentException("rank " + rank + " outside 0.." + (world - 1));
        if (storePort < 1 || storePort > 65535) throw new IllegalArgumentException("store port out of range: " + storePort);
        List<String> hostOrder = hosts.stream().distinct().toList();
        String mine = hosts.get(rank);
        int localRank = 0, localWorld = 0;
        for (int r = 0; r < world; r++) {
            if (!hosts.get(r).equals(mine)) continue;
            if (r < rank) localRank++;
            localWorld++;
        }
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        env.put("LOCAL_RANK", Integer.toString(localRank));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(localWorld));
        env.put("JTRAIN_NODE_RANK", Integer.toString(hostOrder.indexOf(mine)));
        env.put("JTRAIN_NNODES", Integer.toString(hostOrder.size()));
        env.put("MASTER_ADDR", hosts.get(0));
        env.put("MASTER_PORT", Integer.toString(storePort));
        return env;
    }

    /** The host part of a Spark task address ({@code host:port}, or {@code [v6]:port}). */
    public static String hostOf(String address) {
        if (address.startsWith("[")) return address.substring(1, address.indexOf(']'));
        int colon = address.lastIndexOf(':');
        return colon > 0 && address.indexOf(':') == colon ? address.substring(0, colon) : address;
    }
}
