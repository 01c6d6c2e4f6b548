package dev.jtrain.checkpoint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The messages of the save protocol, each prefixed with one byte naming its kind, so that a rank that is in a
 * different phase than the coordinator is recognised instead of misread.
 *
 * <p>Why it is needed: with a cached plan a save issues no planning collectives (the point of caching). If one rank's
 * layout changed and the others' did not, that rank gathers its {@link #PLAN} while the others gather their
 * {@link #REPORT}: the collectives line up (both are a gather then a broadcast), but the payloads do not. The
 * coordinator sees the mixed kinds, and answers every rank with a {@link #LAYOUT_MISMATCH} naming the ranks whose layout
 * changed; every rank fails that save with the same message, in step, rather than parse garbage or wait for a
 * collective that never comes, and clears its plan cache so that the next save replans on every rank.
 */
final class SaveMessage {
    /** A rank's LocalPlan, gathered to the coordinator on a plan-cache miss. */
    static final byte PLAN = 'P';
    /** The coordinator's answer to PLAN messages: a SavePlanner.Reply. */
    static final byte PLAN_REPLY = 'A';
    /** A rank's RankReport after writing its file. */
    static final byte REPORT = 'R';
    /** The coordinator's verdict: empty when committed, else why not (every rank throws it). */
    static final byte OUTCOME = 'O';
    /** A verdict of OUTCOME's kind for mixed phases: the save fails and every rank clears its plan cache. */
    static final byte LAYOUT_MISMATCH = 'M';
    /** The coordinator's verdict for a committed checkpoint with something to report (retention failed): its text. */
    static final byte COMMITTED_WITH_NOTE = 'N';

    private SaveMessage() {}

    static byte[] wrap(byte kind, byte[] body) {
        byte[] out = new byte[body.length + 1];
        out[0] = kind;
        System.arraycopy(body, 0, out, 1, body.length);
        return out;
    }

    static byte[] wrap(byte kind, String text) { return wrap(kind, text.getBytes(StandardCharsets.UTF_8)); }

    static byte kind(byte[] message) { return message.length == 0 ? 0 : message[0]; }

    static byte[] body(byte[] message) { return message.length == 0 ? message : Arrays.copyOfRange(message, 1, message.length); }

    static String text(byte[] message) { return new String(body(message), StandardCharsets.UTF_8); }

    /**
     * The coordinator's complaint when the gathered messages mix PLAN and REPORT (ranks in different phases) or
     * one has an unknown kind, else null.
     *
     * @param messages every rank's message, by rank
     */
    static String mixedPhases(List<byte[]> messages) {
        List<Integer> replanned = new ArrayList<>(), cached = new ArrayList<>();
        for (int r = 0; r < messages.size(); r++) {
            byte k = kind(messages.get(r));
            if (k == PLAN) replanned.add(r);
            else if (k == REPORT) cached.add(r);
            else return "rank " + r + " sent an unexpected save message (kind '" + (char) k + "'); the ranks are out of step";
        }
        if (replanned.isEmpty() || cached.isEmpty()) return null;
        return "the saved state's layout (names, shapes, dtypes or sharding) changed on rank(s) " + replanned
                + " but not on rank(s) " + cached + ", so only some ranks replanned (plan cache). Every rank must change"
                + " its layout at the same save; the plan cache is now cleared on every rank, so the next save replans"
                + " everywhere";
    }
}
