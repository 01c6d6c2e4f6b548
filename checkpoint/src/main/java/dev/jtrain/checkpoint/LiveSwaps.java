package dev.jtrain.checkpoint;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Moves loaded values into live buffers while the load is still reading, yet can put every live value back if the load
 * fails later (a corrupt piece here or on another rank, a lost peer): each range is <em>swapped</em> between staging and
 * the live buffer, and the swaps are logged. A swap is its own inverse, so replaying the log backwards restores the
 * live buffers exactly — an undo log (as in write-ahead logging's undo records) whose old values live in the staging
 * the load already holds, so the guarantee costs no second copy of the model. Undoing in reverse order is exact even
 * when live ranges alias (tied weights), since it inverts a composition of permutations step by step.
 *
 * <p>A staging range must feed exactly one live range: after its swap it holds the old live values.
 *
 * <p>Threading: one load, one thread.
 */
final class LiveSwaps {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** The swap goes through this many floats at a time (64 KiB: stays in L1/L2 between its three copies). */
    private static final int TMP_FLOATS = 16 << 10;

    private record Swap(MemorySegment stage, long stageOffset, float[] live, int liveOffset, int count) { }

    private final float[] tmp = new float[TMP_FLOATS];
    private final List<Swap> log = new ArrayList<>();

    /** Exchanges {@code count} little-endian floats at {@code stage[stageOffset]} with {@code live[liveOffset..]}. */
    void swap(MemorySegment stage, long stageOffset, float[] live, int liveOffset, int count) {
        if (count == 0) return;
        // checked and logged before anything moves: an exchange that starts always finishes, so undo is exact
        Objects.checkFromIndexSize(liveOffset, count, live.length);
        Objects.checkFromIndexSize(stageOffset, 4L * count, stage.byteSize());
        log.add(new Swap(stage, stageOffset, live, liveOffset, count));
        exchange(stage, stageOffset, live, liveOffset, count);
    }

    /** Swaps done so far; 0 after {@link #undo}. */
    int size() { return log.size(); }

    /** Puts back every live value swapped out, newest swap first. */
    void undo() {
        for (int i = log.size() - 1; i >= 0; i--) {
            Swap s = log.get(i);
            exchange(s.stage(), s.stageOffset(), s.live(), s.liveOffset(), s.count());
        }
        log.clear();
    }

    private void exchange(MemorySegment stage, long stageOffset, float[] live, int liveOffset, int count) {
        for (int done = 0; done < count; ) {
            int n = Math.min(TMP_FLOATS, count - done);
            long at = stageOffset + 4L * done;
            System.arraycopy(live, liveOffset + done, tmp, 0, n);
            MemorySegment.copy(stage, F32_LE, at, live, liveOffset + done, n);
            MemorySegment.copy(tmp, 0, stage, F32_LE, at, n);
            done += n;
        }
    }
}
