package dev.jtrain.comm.launch;

/**
 * How the JIT of rank JVMs that share a host should compile. When a host runs several ranks, each JVM's compiler
 * threads compete with the other ranks' busy threads for cores. By default a method waiting in the compile queue
 * keeps running in the interpreter or in C1 code, and for Vector API kernels that is tens of times slower than the
 * C2 code it waits for (the vector intrinsics exist only in C2), while taking the CPU the compile needs. Compiling in
 * the foreground ({@code -XX:-BackgroundCompilation}) makes the thread wait for the compile instead, which shortens a
 * fresh rank's first steps by about a third and leaves the steady state as it was (bench/MEASUREMENTS.md, "JIT on
 * shared cores"). With a core to spare for the compiler (one rank alone) background compilation is faster, so it stays.
 *
 * <p>The launcher passes the option through {@code JDK_JAVA_OPTIONS}, which every {@code java} it starts reads, so
 * it reaches ranks whatever their command line; a user's own setting of the option wins.
 */
public final class JitPolicy {
    static final String OPTION = "-XX:-BackgroundCompilation";

    private JitPolicy() {}

    /**
     * {@code JDK_JAVA_OPTIONS} for the ranks of a node: {@code inherited} (the launcher's own value, may be null) with
     * foreground compilation added when {@code ranksOnNode} ranks share the node; null when there is nothing to set.
     */
    public static String childJavaOptions(int ranksOnNode, String inherited) {
        boolean userChose = inherited != null && inherited.contains("BackgroundCompilation");
        if (ranksOnNode < 2 || userChose) return inherited;
        return inherited == null || inherited.isBlank() ? OPTION : inherited + " " + OPTION;
    }
}
