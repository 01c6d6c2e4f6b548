package dev.jtrain.cli;

import dev.jtrain.comm.launch.RendezvousEnv;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The way back of a restarted run, phase by phase, on the wall clock: the launcher saw the previous attempt fail →
 * it restarted the group → this process was up with its state loaded → the first step finished. Each phase is the
 * place to look when recovery is slow (detection, restart policy, JVM start and checkpoint load, first step).
 *
 * @param restart       which restart this is (1 = the first)
 * @param failedAtMs    when the launcher saw the failure
 * @param restartedAtMs when the launcher started this attempt
 */
record RecoveryTimeline(int restart, long failedAtMs, long restartedAtMs) {
    /** Present in a group the launcher restarted (it sets the times); empty in a first attempt or under other engines. */
    static Optional<RecoveryTimeline> fromEnv(Map<String, String> env) {
        String failed = env.get(RendezvousEnv.RECOVERY_FAILED_AT_MS), restarted = env.get(RendezvousEnv.RECOVERY_RESTARTED_AT_MS);
        if (failed == null || restarted == null) return Optional.empty();
        try {
            return Optional.of(new RecoveryTimeline(Integer.parseInt(env.getOrDefault(RendezvousEnv.RESTART_COUNT, "1")),
                    Long.parseLong(failed), Long.parseLong(restarted)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed recovery times from the launcher: " + RendezvousEnv.RECOVERY_FAILED_AT_MS
                    + "=" + failed + ", " + RendezvousEnv.RECOVERY_RESTARTED_AT_MS + "=" + restarted, e);
        }
    }

    /**
     * Where this process's start went, on the wall clock, splitting "up, state loaded": the JVM started (for a rank
     * restarted in its JVM, {@code warm}: the launcher's restart message arrived); the command started and its process
     * group was ready (class loading, rendezvous, transports, link figures); data, model and strategy were built; the
     * state load follows. A slow restart shows here which of them to look at.
     */
    record Startup(long jvmStartMs, boolean warm, long groupReadyMs, long builtMs) {}

    /**
     * The phases, once the first step after the restart is done.
     *
     * @param startup        this process's start, up to the state load
     * @param loadedAtMs     when the state was loaded (or the run was ready to start, without a checkpoint)
     * @param resumedStep    the first step this attempt runs (0 without a checkpoint)
     * @param resumedFrom    the checkpoint tier loaded ("memory", "disk"), null without a checkpoint
     * @param lastStepBefore the last step the failed attempt finished, -1 if unknown
     */
    Phases phases(Startup startup, long loadedAtMs, long firstStepAtMs, long resumedStep, String resumedFrom, long lastStepBefore) {
        return new Phases(this, startup, loadedAtMs, firstStepAtMs, resumedStep, resumedFrom, lastStepBefore);
    }

    record Phases(RecoveryTimeline t, Startup startup, long loadedAtMs, long firstStepAtMs, long resumedStep, String resumedFrom,
                  long lastStepBefore) {
        double restartSeconds() { return (t.restartedAtMs - t.failedAtMs) / 1e3; }

        double loadSeconds() { return (loadedAtMs - t.restartedAtMs) / 1e3; }

        /** The parts of {@link #loadSeconds}: the JVM up, startup and process group, data/model/strategy, the state. */
        double[] loadParts() {
            return new double[]{(startup.jvmStartMs() - t.restartedAtMs) / 1e3, (startup.groupReadyMs() - startup.jvmStartMs()) / 1e3,
                    (startup.builtMs() - startup.groupReadyMs()) / 1e3, (loadedAtMs - startup.builtMs()) / 1e3};
        }

        double firstStepSeconds() { return (firstStepAtMs - loadedAtMs) / 1e3; }

        double totalSeconds() { return (firstStepAtMs - t.failedAtMs) / 1e3; }

        /** Steps the failed attempt had finished that this one runs again; -1 if unknown. */
        long stepsRecomputed() { return lastStepBefore < 0 ? -1 : Math.max(0, lastStepBefore - resumedStep + 1); }

        String line() {
            double[] p = loadParts();
            return String.format(Locale.ROOT, "recovery (restart %d): failure seen -> group restarted %.1f s -> up, state loaded %.1f s"
                            + " (%s %.1f, startup and process group %.1f, data, model and strategy %.1f, state %.1f)"
                            + " -> first step done %.1f s; %.1f s from failure to the next finished step; resumed at step %d%s, %s",
                    t.restart, restartSeconds(), loadSeconds(), startup.warm() ? "warm, in its JVM: restart received" : "JVM started", p[0], p[1], p[2], p[3], firstStepSeconds(), totalSeconds(), resumedStep,
                    resumedFrom == null ? "" : " from " + resumedFrom,
                    stepsRecomputed() < 0 ? "steps recomputed unknown" : stepsRecomputed() + " step(s) recomputed");
        }

        Map<String, Object> record() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("restart", t.restart);
            m.put("restart_s", restartSeconds());
            m.put("load_s", loadSeconds());
            double[] p = loadParts();
            m.put("warm", startup.warm());
            m.put("load_jvm_s", p[0]);
            m.put("load_group_s", p[1]);
            m.put("load_build_s", p[2]);
            m.put("load_state_s", p[3]);
            m.put("first_step_s", firstStepSeconds());
            m.put("total_s", totalSeconds());
            m.put("resumed_step", resumedStep);
            m.put("resumed_from", resumedFrom);
            m.put("steps_recomputed", stepsRecomputed());
            return m;
        }
    }
}
