package dev.jtrain.comm.transport;

import java.util.Locale;

/** How a rank reaches a peer (what {@code jtrain topo} prints). */
public enum LinkKind {
    /** The rank itself: a copy. */
    SELF,
    /** Shared-memory rings between processes of one host. */
    SHM,
    /** A TCP connection (another host, or any peer with {@code JTRAIN_TRANSPORT=tcp}). */
    TCP,
    /** Ranks as threads of one JVM (the in-process test transport). */
    LOCAL,
    /** Not reachable through this transport (a shared-memory transport asked about a peer on another host). */
    NONE;

    /** Whether the peer shares this process's host (its bytes never cross a network). */
    public boolean sameHost() { return this == SELF || this == SHM || this == LOCAL; }

    /** Lower-case name, as printed and as {@code JTRAIN_TRANSPORT} spells transports. */
    public String label() { return name().toLowerCase(Locale.ROOT); }
}
