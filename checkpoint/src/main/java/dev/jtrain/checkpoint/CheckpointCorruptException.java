package dev.jtrain.checkpoint;

import java.nio.file.Path;

/**
 * A committed checkpoint cannot be used: its metadata or a shard is missing, unreadable, truncated or fails its
 * CRC32C. Every rank of the load throws it alike (the ranks agree on failures), with the live state untouched, so a
 * caller may fall back to an older checkpoint ({@link LoadOptions#newestValid}). The files are left as they are, for
 * inspection ({@code jtrain ckpt verify}).
 */
public final class CheckpointCorruptException extends CheckpointException {
    private static final long serialVersionUID = 1L;
    private final transient Path directory;

    public CheckpointCorruptException(Path directory, String message, Throwable cause) {
        super(message, cause);
        this.directory = directory;
    }

    /** The step directory that failed. */
    public Path directory() {
        return directory;
    }
}
