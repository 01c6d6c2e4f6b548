package dev.jtrain.parallel;

/** The ranks a ZeRO strategy shards across. */
public enum ShardScope {
    /** Every rank of the group holds one shard (ZeRO, FSDP's FULL_SHARD). */
    WORLD,
    /**
     * The ranks of each host hold one shard each, and ranks with the same local index on different hosts hold the
     * same shard (hybrid sharding, FSDP's HYBRID_SHARD): parameters are gathered and gradients reduce-scattered on the
     * host's links only, and the reduced shards are all-reduced across hosts.
     */
    HOST
}
