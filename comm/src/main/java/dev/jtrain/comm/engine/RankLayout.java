package dev.jtrain.comm.engine;

/**
 * Where one rank stands in the job, as an engine describes it.
 *
 * @param engine         the engine that started the process ({@link ClusterEngine#name()})
 * @param rank           global rank
 * @param worldSize      ranks in the job
 * @param localRank      rank among the processes on this node
 * @param localWorldSize processes on this node
 * @param nodeRank       index of this node in the job, or -1 when the engine does not say
 * @param nnodes         nodes in the job, or -1 when the engine does not say
 * @param store          the rendezvous store, and whether this process hosts it
 * @param jobToken       secret every connection of the job presents
 * @param restartCount   which attempt of the job this is (store keys are prefixed with it)
 * @param jobId          the engine's job and step id, for messages; empty when none
 */
public record RankLayout(String engine, int rank, int worldSize, int localRank, int localWorldSize, int nodeRank,
                         int nnodes, StoreAddress store, String jobToken, int restartCount, String jobId) {
    public RankLayout {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException(engine + ": rank out of range: rank=" + rank + " worldSize=" + worldSize);
        }
        if (localWorldSize < 1 || localRank < 0 || localRank >= localWorldSize || localWorldSize > worldSize) {
            throw new IllegalArgumentException(engine + ": local rank out of range: localRank=" + localRank
                    + " localWorldSize=" + localWorldSize + " worldSize=" + worldSize);
        }
        if (jobToken == null || jobToken.isEmpty()) throw new IllegalArgumentException(engine + ": job token must be set");
        if (jobId == null) jobId = "";
    }
}
