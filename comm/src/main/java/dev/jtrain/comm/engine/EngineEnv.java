package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.topology.HostIdentity;

import java.util.Map;

/**
 * What engines detect from: the process environment and this host's name, read once ({@link #current()}) so that
 * every engine is a pure function of it and tests can hand in any cluster's variables.
 *
 * @param vars     environment variables
 * @param hostName this host's name as the engine's node lists spell it (Slurm's {@code SLURMD_NODENAME} when set,
 *                 else the kernel's host name)
 */
public record EngineEnv(Map<String, String> vars, String hostName) {
    public EngineEnv {
        vars = Map.copyOf(vars);
        if (hostName == null || hostName.isBlank()) hostName = "localhost";
    }

    public static EngineEnv current() {
        Map<String, String> env = System.getenv();
        String host = env.get("SLURMD_NODENAME");
        if (host == null || host.isBlank()) {
            host = HostIdentity.name();
        }
        return new EngineEnv(env, host);
    }

    public static EngineEnv of(Map<String, String> vars, String hostName) { return new EngineEnv(vars, hostName); }

    public boolean has(String name) {
        String v = vars.get(name);
        return v != null && !v.isBlank();
    }

    public String get(String name) {
        String v = vars.get(name);
        return v == null || v.isBlank() ? null : v.trim();
    }

    public String get(String name, String dflt) {
        String v = get(name);
        return v == null ? dflt : v;
    }

    /** A required integer in {@code [min, max]}; the error names the engine, the variable and its value. */
    public int intVar(String engine, String name, int min, int max) {
        String v = get(name);
        if (v == null) throw new RendezvousConfigException(engine + ": environment variable " + name + " is not set");
        return checkRange(engine, name, parse(engine, name, v), min, max);
    }

    /** An optional integer in {@code [min, max]}, {@code dflt} when unset. */
    public int intVar(String engine, String name, int min, int max, int dflt) {
        String v = get(name);
        return v == null ? dflt : checkRange(engine, name, parse(engine, name, v), min, max);
    }

    public long longVar(String engine, String name, long dflt) {
        String v = get(name);
        return v == null ? dflt : parse(engine, name, v);
    }

    private static long parse(String engine, String name, String v) {
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new RendezvousConfigException(engine + ": environment variable " + name + "='" + v + "' is not an integer", e);
        }
    }

    private static int checkRange(String engine, String name, long v, int min, int max) {
        if (v < min || v > max) {
            throw new RendezvousConfigException(engine + ": environment variable " + name + "=" + v + " is out of range ["
                    + min + ", " + max + "]");
        }
        return (int) v;
    }

    /** The host name without its domain: node lists name hosts short, {@code gethostname} may not. */
    public static String shortName(String host) {
        int dot = host.indexOf('.');
        return dot > 0 && !Character.isDigit(host.charAt(0)) ? host.substring(0, dot) : host;
    }
}
