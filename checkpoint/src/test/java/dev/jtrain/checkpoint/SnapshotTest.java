package dev.jtrain.checkpoint;

import dev.jtrain.tensor.state.TensorShard;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(30)
class SnapshotTest {
    private static TensorShard shard(String name, int n, float base) {
        float[] d = new float[n];
        for (int i = 0; i < n; i++) d[i] = base + i;
        return new TensorShard(name, new long[]{n}, 0, d, 0, n, false);
    }

    private static long crc(MemorySegment s, long from, long bytes) {
        CRC32C c = new CRC32C();
        c.update(s.asSlice(from, bytes).asByteBuffer());
        return c.getValue();
    }

    /** Pieces of 3 MiB, 0 and 5 MiB + 4 bytes: copied in 2 MiB steps, checksummed per piece, zero-length one included. */
    @Test
    void copiesInFileOrderAndChecksumsEachPieceForTheWriterWaitingOnAnotherThread() throws Exception {
        List<TensorShard> live = List.of(shard("a", 3 << 18, 1f), shard("z", 0, 0f), shard("b", (5 << 18) + 1, -7f));
        List<WriteItem> items = List.of(new WriteItem(0, "a", 0, 3 << 18, "a", 0),
                new WriteItem(1, "z", 0, 0, "z", 3L << 20),
                new WriteItem(2, "b", 0, (5 << 18) + 1, "b", 3L << 20));
        long total = (8L << 20) + 4;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment staging = arena.allocate(total);
            Snapshot s = new Snapshot(items, live, staging, true);
            Thread copier = Thread.ofPlatform().start(s::run);
            s.awaitStaged(1 << 20);
            s.awaitStaged(total);
            s.awaitEnd();
            copier.join();
            assertThat(s.failure()).isNull();
            assertThat(s.copied()).isCompleted();
            assertThat(s.nanos()).isPositive();
            assertThat(staging.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, 5)).isEqualTo(6f);
            assertThat(staging.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, (3 << 18) + 2)).isEqualTo(-5f);
            assertThat(s.crc32c()).containsExactly(crc(staging, 0, 3L << 20), new CRC32C().getValue(),
                    crc(staging, 3L << 20, (5L << 20) + 4));
        }
    }

    /** A copy that fails part way must not leave the writer waiting: it sees the failure, and the fence completes. */
    @Test
    void aFailedCopyFailsTheWriterWaitAndCompletesTheFence() throws Exception {
        List<TensorShard> live = List.of(shard("a", 1 << 20, 1f), shard("b", 10, 0f));
        // the second piece claims more elements than its live buffer holds: the copy throws there
        List<WriteItem> items = List.of(new WriteItem(0, "a", 0, 1 << 20, "a", 0), new WriteItem(1, "b", 0, 1000, "b", 4L << 20));
        try (Arena arena = Arena.ofShared()) {
            Snapshot s = new Snapshot(items, live, arena.allocate((4L << 20) + 4000), true);
            assertThatThrownBy(s::run).isInstanceOf(IndexOutOfBoundsException.class);
            // the first piece did land, but the save is lost anyway: the writer stops at once
            assertThatThrownBy(() -> s.awaitStaged(1)).isInstanceOf(IOException.class)
                    .hasMessageContaining("copy into staging failed");
            s.awaitEnd();
            assertThat(s.failure()).isInstanceOf(IndexOutOfBoundsException.class);
            assertThat(s.copied()).isCompletedExceptionally();
        }
    }

    /** The writer is already waiting when the copy fails (or is never started): it must be woken with the failure. */
    @Test
    void aWriterAlreadyWaitingIsWokenByAFailedOrAbortedCopy() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            List<TensorShard> live = List.of(shard("a", 10, 0f));
            for (boolean abort : new boolean[]{false, true}) {
                Snapshot s = new Snapshot(List.of(new WriteItem(0, "a", 0, 1000, "a", 0)), live, arena.allocate(4000), false);
                java.util.concurrent.CompletableFuture<Throwable> seen = new java.util.concurrent.CompletableFuture<>();
                Thread waiter = Thread.ofPlatform().start(() -> {
                    try {
                        s.awaitStaged(4000);
                        seen.complete(null);
                    } catch (Throwable t) {
                        seen.complete(t);
                    }
                });
                while (waiter.getState() != Thread.State.WAITING) Thread.onSpinWait(); // blocked in awaitStaged
                if (abort) s.abort(new java.util.concurrent.RejectedExecutionException("closed"));
                else assertThatThrownBy(s::run).isInstanceOf(IndexOutOfBoundsException.class);
                assertThat(seen.get(10, TimeUnit.SECONDS)).as("abort=" + abort).isInstanceOf(IOException.class)
                        .hasMessageContaining("copy into staging failed");
                assertThat(s.copied()).isCompletedExceptionally();
                s.abort(new IllegalStateException("late")); // the first end wins
                assertThat(s.failure()).isInstanceOf(abort ? java.util.concurrent.RejectedExecutionException.class
                        : IndexOutOfBoundsException.class);
            }
        }
    }
}
