package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.posix.PosixStorage;
import dev.jtrain.comm.ProcessGroup;

/**
 * Test fixture (in the checkpoint test-jar): a {@link Checkpointer} whose overlapped snapshot waits before it copies,
 * so tests elsewhere can show that training waits for the copy before changing the state it reads.
 */
public final class SlowSnapshots {
    private SlowSnapshots() {}

    public static Checkpointer checkpointer(ProcessGroup group, long snapshotDelayMs) {
        return new Checkpointer(group, CheckpointerOptions.defaults(), new PosixStorage(true), snapshotDelayMs);
    }
}
