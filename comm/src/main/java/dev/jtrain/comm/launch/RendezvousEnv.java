package dev.jtrain.comm.launch;

/** Names of the environment variables the launcher sets and {@link Rendezvous#fromEnv()} reads (torchrun's names). */
public final class RendezvousEnv {
    private RendezvousEnv() { }

    public static final String RANK = "RANK";
    public static final String WORLD_SIZE = "WORLD_SIZE";
    public static final String LOCAL_RANK = "LOCAL_RANK";
    public static final String LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE";
    public static final String MASTER_ADDR = "MASTER_ADDR";
    public static final String MASTER_PORT = "MASTER_PORT";
    public static final String JOB_TOKEN = "JTRAIN_JOB_TOKEN";
    /** "1" when the launcher hosts the store, so rank 0 must not (torchrun: TORCHELASTIC_USE_AGENT_STORE). */
    public static final String STORE_IN_LAUNCHER = "JTRAIN_STORE_IN_LAUNCHER";
    /** Which attempt of the group this is (0 first); store keys are prefixed with it so restarts start clean. */
    public static final String RESTART_COUNT = "JTRAIN_RESTART_COUNT";
    /**
     * Set by the launcher for a restarted group: when it saw the previous attempt fail, and when it started this one
     * (wall clock, ms since the epoch), so the ranks can time their recovery.
     */
    public static final String RECOVERY_FAILED_AT_MS = "JTRAIN_RECOVERY_FAILED_AT_MS";
    public static final String RECOVERY_RESTARTED_AT_MS = "JTRAIN_RECOVERY_RESTARTED_AT_MS";
    /** This node's index in a multi-node job, set by the launcher for information (torchrun: GROUP_RANK). */
    public static final String NODE_RANK = "JTRAIN_NODE_RANK";
    /** The world size the job was launched with; larger than {@link #WORLD_SIZE} after the job shrank (--min-nodes). */
    public static final String JOB_WORLD_SIZE = "JTRAIN_JOB_WORLD_SIZE";
    /** Nodes in the job, set by the launcher. */
    public static final String NNODES = "JTRAIN_NNODES";
    /**
     * Set by the launcher: every node's checkpoint memory holder ("host:port", by node index, comma-separated), which
     * keeps in-memory checkpoints across restarts of the ranks.
     */
    public static final String CKPT_HOLDERS = "JTRAIN_CKPT_HOLDERS";
    /**
     * Set by the launcher when this host has shared memory: the directory where its ranks leave checkpoint chunks for
     * this node's holder to adopt (written once into shared memory instead of sent through the loopback socket).
     */
    public static final String CKPT_SHM_DIR = "JTRAIN_CKPT_SHM_DIR";
    /** Set by the launcher: the bytes the smallest of those holders can keep (its heap, less a reserve). */
    public static final String CKPT_HOLDER_BYTES = "JTRAIN_CKPT_HOLDER_BYTES";
    /** Rendezvous and default communication timeout in milliseconds. */
    public static final String TIMEOUT_MS = "JTRAIN_TIMEOUT_MS";
}
