package dev.jtrain.checkpoint;

import java.nio.file.Path;

/**
 * A committed checkpoint cannot be used: its metadata or a shard is missing, malformed, truncated or fails its
 * CRC32C (a storage that fails to read it, or a model it does not fit, is a plain {@link CheckpointException}: an
 * older checkpoint would be no better, and this one must not be set aside). Every rank of the load throws it alike (the ranks agree on failures), with the live state untouched, so a
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
