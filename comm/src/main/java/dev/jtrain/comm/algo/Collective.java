package dev.jtrain.comm.algo;

import java.util.Locale;

/** The collective operations; {@link #envName} is the key used in {@code JTRAIN_ALGO} (e.g. {@code allreduce:ring}). */
public enum Collective {
    ALL_REDUCE("allReduce", "allreduce"),
    BROADCAST("broadcast", "broadcast"),
    REDUCE("reduce", "reduce"),
    ALL_GATHER("allGather", "allgather"),
    REDUCE_SCATTER("reduceScatter", "reducescatter"),
    GATHER("gather", "gather"),
    SCATTER("scatter", "scatter"),
    ALL_TO_ALL("allToAll", "alltoall"),
    BARRIER("barrier", "barrier");

    private final String apiName;
    private final String envName;

    Collective(String apiName, String envName) {
        this.apiName = apiName;
        this.envName = envName;
    }

    /** The method name in {@code ProcessGroup}, used in messages. */
    public String apiName() { return apiName; }

    public String envName() { return envName; }

    public static Collective fromEnvName(String s) {
        String k = s.trim().toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
        for (Collective c : values()) if (c.envName.equals(k)) return c;
        throw new IllegalArgumentException("unknown collective '" + s + "'; expected one of allreduce, broadcast, reduce, "
                + "allgather, reducescatter, gather, scatter, alltoall, barrier");
    }
}
