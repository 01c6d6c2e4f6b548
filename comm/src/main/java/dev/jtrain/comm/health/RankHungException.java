package dev.jtrain.comm.health;

import dev.jtrain.comm.CommException;

/** A peer rank stopped beating (it is stopped, frozen or hung), or the store that carries the beats stopped answering. */
public final class RankHungException extends CommException {
    private final int rank;

    public RankHungException(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** The rank that went silent, or -1 when the store did. */
    public int rank() {
        return rank;
    }
}
