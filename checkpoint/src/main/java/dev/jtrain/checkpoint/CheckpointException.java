package dev.jtrain.checkpoint;

/**
 * A checkpoint could not be saved, committed, found or loaded. The message names what failed and where: the rank,
 * the checkpoint directory or file, and the tensor (item) involved, and says what to do when there is something to do.
 * Unchecked: a broken checkpoint is not something the training loop can retry its way out of.
 */
public class CheckpointException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CheckpointException(String message) {
        super(message);
    }

    public CheckpointException(String message, Throwable cause) {
        super(message, cause);
    }
}
