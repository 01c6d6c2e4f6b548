package dev.jtrain.spark;

/** A rank's jtrain process exited non-zero; the message names the rank, its host and its last output. */
public final class RankFailedException extends RuntimeException {
    public RankFailedException(String message) { super(message); }
}
