package dev.jtrain.comm;

/**
 * A communication operation failed: peer died, connection reset, protocol violation, mismatched collective.
 * Messages name this rank, the operation (with its sequence number) and the peer involved, and say what to do.
 */
public class CommException extends JTrainCommException {
    public CommException(String message) { super(message); }
    public CommException(String message, Throwable cause) { super(message, cause); }
}
