package dev.jtrain.comm;

/** Root of the communication library's unchecked exceptions (comm does not depend on core's hierarchy). */
public class JTrainCommException extends RuntimeException {
    public JTrainCommException(String message) { super(message); }
    public JTrainCommException(String message, Throwable cause) { super(message, cause); }
}
