package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.launch.RendezvousEnv;

/**
 * The store's port when the engine does not give one. {@code MASTER_PORT} always wins. Otherwise the port is a
 * function of the engine's job and step ids, so that every rank computes the same one without talking, and two
 * jobs or two steps of one job that share their first node do not collide:
 * {@code port = 10000 + (jobId mod 1400) * 16 + (stepId mod 16)}, 10000-32399. Consecutive job ids map to distinct
 * ports, so two jobs collide only when their ids differ by a multiple of 1400 and both are still running on the same
 * first node, and two steps of one job only when 16 or more run at once; a collision is then a clear bind error
 * naming the port, and {@code MASTER_PORT} sets one by hand. The range ends below Linux's ephemeral ports
 * (32768-60999 by default), which outgoing connections on the store's host take at random and would hold at bind.
 */
final class StorePort {
    static final int BASE = 10000;
    static final int JOB_SLOTS = 1400;
    static final int STEP_SLOTS = 16;

    private StorePort() {}

    static int of(EngineEnv env, String engine, long jobId, long stepId) {
        if (env.has(RendezvousEnv.MASTER_PORT)) return env.intVar(engine, RendezvousEnv.MASTER_PORT, 1, 65535);
        return BASE + (int) Math.floorMod(jobId, (long) JOB_SLOTS) * STEP_SLOTS + (int) Math.floorMod(stepId, (long) STEP_SLOTS);
    }

    /** For engines whose job id is a string (Open MPI's jobid, a PMIx namespace). */
    static int ofKey(EngineEnv env, String engine, String jobKey) {
        if (env.has(RendezvousEnv.MASTER_PORT)) return env.intVar(engine, RendezvousEnv.MASTER_PORT, 1, 65535);
        if (jobKey == null) {
            throw new RendezvousConfigException(engine + ": no job id to derive the store port from; set "
                    + RendezvousEnv.MASTER_PORT + " to a free port on the store's host");
        }
        long h = 1125899906842597L; // a 64-bit string hash: Java's 32-bit one clusters on short numeric ids
        for (int i = 0; i < jobKey.length(); i++) h = 31 * h + jobKey.charAt(i);
        return BASE + (int) Math.floorMod(h ^ (h >>> 29), (long) JOB_SLOTS * STEP_SLOTS);
    }
}
