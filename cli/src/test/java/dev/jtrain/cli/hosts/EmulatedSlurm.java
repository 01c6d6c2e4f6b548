package dev.jtrain.cli.hosts;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A Slurm cluster over {@link EmulatedHosts}: {@code test/hosts/slurm.sh} (slurmctld on jt-node1, a slurmd per host,
 * a private munged; every file under the harness's state directory). Clients run on host 1 with {@link #env()}.
 */
public final class EmulatedSlurm implements AutoCloseable {
    static final Path SLURM_SH = EmulatedHosts.REPO.resolve("test/hosts/slurm.sh");
    private final EmulatedHosts hosts;
    private boolean closed;

    private EmulatedSlurm(EmulatedHosts hosts) { this.hosts = hosts; }

    /** Starts Slurm on every host; skips (or fails under CI) when Slurm or munge is not installed. */
    public static EmulatedSlurm start(EmulatedHosts hosts) {
        EmulatedHosts.requireAvailable(Path.of("/bin/sh"), "-c",
                "for c in slurmctld slurmd srun sbatch salloc munged; do command -v $c >/dev/null || "
                        + "{ echo \"$c not found: install the Debian packages slurm-wlm and munge\"; exit 1; }; done");
        EmulatedSlurm s = new EmulatedSlurm(hosts);
        try {
            EmulatedHosts.run(List.of(SLURM_SH.toString(), "up", Integer.toString(hosts.size())), Duration.ofSeconds(180), true);
        } catch (RuntimeException e) {
            String logs = logs();
            s.close();
            throw new IllegalStateException(e.getMessage() + "\n" + logs, e);
        }
        return s;
    }

    /** What clients need in their environment ({@code slurm.sh env}: SLURM_CONF, Open MPI's session directory ...). */
    public Map<String, String> env() {
        Map<String, String> env = new java.util.HashMap<>();
        for (String line : EmulatedHosts.run(List.of(SLURM_SH.toString(), "env"), Duration.ofSeconds(30), true).output().split("\n")) {
            if (!line.startsWith("export ")) continue;
            String kv = line.substring("export ".length());
            int eq = kv.indexOf('=');
            env.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return env;
    }

    /** The tail of every daemon log, for failure messages. */
    public static String logs() {
        return EmulatedHosts.run(List.of(SLURM_SH.toString(), "logs"), Duration.ofSeconds(30), false).output();
    }

    public EmulatedHosts hosts() { return hosts; }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        EmulatedHosts.run(List.of(SLURM_SH.toString(), "down"), Duration.ofSeconds(120), false);
    }
}
