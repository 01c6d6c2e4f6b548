package dev.jtrain.comm;

/** A communication operation did not complete within its timeout (peer hung, or a rank skipped a collective). */
public class CommTimeoutException extends CommException {
    public CommTimeoutException(String message) { super(message); }
    public CommTimeoutException(String message, Throwable cause) { super(message, cause); }
}
