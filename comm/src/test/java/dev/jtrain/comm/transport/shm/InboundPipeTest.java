package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.transport.HeldBuffer;
import dev.jtrain.comm.transport.UnexpectedBudget;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;

/** A ring's reader on its own, fed by an {@link OutboundPipe} on the same memory, as a peer process would. */
class InboundPipeTest {
    static final int CAPACITY = 64 << 10;

    /** A ring, its writer (the peer's end) and its reader, with a message of {@code bytes} started and 32 KiB of it pushed. */
    private record CutOff(InboundPipe in, UnexpectedBudget budget, long before) {
        static CutOff start(Arena arena, long bytes) {
            MemorySegment ring = arena.allocate(ShmRingDescriptor.fileLength(CAPACITY), 64);
            UnexpectedBudget budget = new UnexpectedBudget(64L << 20);
            OutboundPipe out = new OutboundPipe(1, ring, CAPACITY);
            InboundPipe in = new InboundPipe(0, ring, CAPACITY, budget);
            long before = HeldBuffer.liveBytes();
            out.begin(7, arena.allocate(bytes));
            out.push(CAPACITY / 2);
            in.progress(CAPACITY, null); // no receive posted: taken into a buffer of the reader's own
            return new CutOff(in, budget, before);
        }

        void assertNothingHeld(String when) {
            assertThat(HeldBuffer.liveBytes() - before).as("held bytes " + when).isZero();
            assertThat(budget.heldBytes()).as("budget " + when).isZero();
        }
    }

    /**
     * A message whose sender stops partway (it died, or closed), taken in part into a buffer of the reader's own since
     * no receive was posted: failing the pipe frees that buffer and gives its bytes back to the budget, or a shared
     * arena nobody closes keeps them for the life of the process.
     */
    @Test
    void aMessageCutOffWhileBufferedIsFreedWhenThePipeFails() {
        try (Arena arena = Arena.ofShared()) {
            CutOff c = CutOff.start(arena, 4L << 20);
            assertThat(HeldBuffer.liveBytes() - c.before()).as("the message is being buffered").isEqualTo(4L << 20);
            assertThat(c.budget().heldBytes()).isEqualTo(4L << 20);
            c.in().fail(new CommException("peer rank 0 is gone"));
            c.assertNothingHeld("after the failure");
        }
    }

    /** The same message cut off when the transport closes instead: freed with the other buffered messages. */
    @Test
    void aMessageCutOffWhileBufferedIsFreedAtClose() {
        try (Arena arena = Arena.ofShared()) {
            CutOff c = CutOff.start(arena, 1L << 20);
            c.in().freeBuffered();
            c.assertNothingHeld("after close");
        }
    }
}
