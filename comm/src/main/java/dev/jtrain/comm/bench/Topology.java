package dev.jtrain.comm.bench;

import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroups;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.topology.HostTopology;
import dev.jtrain.comm.topology.LinkClass;
import dev.jtrain.comm.transport.LinkKind;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The rank x rank matrix of link kinds with measured latency and bandwidth, in the spirit of {@code nvidia-smi topo -m}:
 * which transport joins each pair and what it delivers. Pairs are measured one at a time (every other rank waits at a
 * barrier) so measurements do not share the cores: latency is half the round trip of an 8-byte ping-pong (median of
 * {@code pingIters} after a second of untimed ones), bandwidth a one-way stream of {@code streamBytes} messages
 * acknowledged at the end (after one untimed message).
 *
 * <p>Run on every rank of a group; rank 0 returns the table, the others an empty string.
 */
public final class Topology {
    private static final int TAG = 0x7b0; // p2p tags are 0..4095

    private Topology() {}

    public static String measure(ProcessGroup pg, int pingIters, int streamBytes, int streamIters) {
        int n = pg.size(), me = pg.rank();
        float[] latencyUs = new float[n * n], gbps = new float[n * n], kind = new float[n * n];
        for (int p = 0; p < n; p++) kind[me * n + p] = kindCode(pg.linkKind(p));
        float[] ping = new float[2];
        float[] stream = new float[streamBytes / Float.BYTES];
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                pg.barrier();
                if (me == a || me == b) {
                    int peer = me == a ? b : a;
                    warmUp(pg, me == a, peer, ping);
                    long[] rtt = new long[pingIters];
                    for (int i = 0; i < pingIters + 10; i++) {
                        long t0 = System.nanoTime();
                        if (me == a) {
                            pg.send(ping, 0, 2, peer, TAG);
                            pg.recv(ping, 0, 2, peer, TAG);
                        } else {
                            pg.recv(ping, 0, 2, peer, TAG);
                            pg.send(ping, 0, 2, peer, TAG);
                        }
                        if (i >= 10) rtt[i - 10] = System.nanoTime() - t0;
                    }
                    Arrays.sort(rtt);
                    if (me == a) pg.send(stream, 0, stream.length, peer, TAG); // first touch of the stream buffers, untimed
                    else pg.recv(stream, 0, stream.length, peer, TAG);
                    long t0 = System.nanoTime();
                    for (int i = 0; i < streamIters; i++) {
                        if (me == a) pg.send(stream, 0, stream.length, peer, TAG);
                        else pg.recv(stream, 0, stream.length, peer, TAG);
                    }
                    if (me == a) pg.recv(ping, 0, 1, peer, TAG);
                    else pg.send(ping, 0, 1, peer, TAG);
                    double sec = (System.nanoTime() - t0) / 1e9;
                    if (me == a) {
                        latencyUs[a * n + b] = latencyUs[b * n + a] = rtt[pingIters / 2] / 2e3f;
                        gbps[a * n + b] = gbps[b * n + a] = (float) ((double) streamBytes * streamIters / sec / 1e9);
                    }
                }
            }
        }
        pg.allReduce(latencyUs, 0, latencyUs.length, ReduceOp.SUM);
        pg.allReduce(gbps, 0, gbps.length, ReduceOp.SUM);
        pg.allReduce(kind, 0, kind.length, ReduceOp.SUM);
        if (me != 0) return "";
        HostTopology topo = pg.topology();
        StringBuilder sb = new StringBuilder();
        sb.append("hosts: ").append(topo).append('\n');
        int label = 8;
        for (int i = 0; i < n; i++) label = Math.max(label, ("rank " + i + " " + topo.hostName(topo.hostOf(i))).length() + 2);
        sb.append(" ".repeat(label));
        for (int j = 0; j < n; j++) sb.append(String.format("%-26s", "rank " + j + (j > 0 && !topo.sameHost(j - 1, j) ? " |" : "")));
        sb.append('\n');
        for (int i = 0; i < n; i++) {
            if (i > 0 && !topo.sameHost(i - 1, i)) sb.append("-".repeat(label + 26 * n)).append('\n'); // host boundary
            sb.append(String.format("%-" + label + "s", "rank " + i + " " + topo.hostName(topo.hostOf(i))));
            for (int j = 0; j < n; j++) {
                String cell = i == j ? "X" : String.format("%s %.1fus %.2fGB/s", kindName(kind[i * n + j]).toUpperCase(),
                        latencyUs[i * n + j], gbps[i * n + j]);
                sb.append(String.format("%-26s", cell));
            }
            sb.append('\n');
        }
        sb.append("\nLegend: SHM = shared memory (same host), TCP = sockets, LOCAL = in-process; latency = half the median "
                + "round trip of 8 bytes; bandwidth = one-way stream of " + (streamBytes >> 20) + " MiB messages; lines and"
                + " | mark host boundaries.\n");
        sb.append(pg.measuredLinkCosts() != null ? "cost model (measured at group start, back-to-back exchanges of one pair per class):\n"
                : "cost model (not measured: JTRAIN_LINK_COSTS):\n");
        if (topo.intraHostPair() != null) sb.append("  within a host:  ").append(pg.costModel(LinkClass.INTRA_HOST)).append('\n');
        if (topo.spansHosts()) sb.append("  between hosts:  ").append(pg.costModel(LinkClass.INTER_HOST)).append('\n');
        sb.append("to start jobs on these hosts without measuring: JTRAIN_LINK_COSTS='").append(pg.linkCosts().format()).append("'\n");
        return sb.toString();
    }

    /** How long each pair ping-pongs untimed first. */
    static final long WARMUP_NANOS = 1_000_000_000L;

    /**
     * Untimed ping-pong for {@link #WARMUP_NANOS}: a fresh JVM runs its first thousands of round trips interpreted
     * while C2 compiles on the same two cores, and then a peer that is descheduled for a millisecond puts the median
     * near a millisecond, hundreds of times the warm figure. Side {@code a} decides when to stop and says so
     * in the second float of the ping, so both sides run the same count.
     */
    private static void warmUp(ProcessGroup pg, boolean a, int peer, float[] ping) {
        if (a) {
            long until = System.nanoTime() + WARMUP_NANOS;
            boolean more;
            do {
                more = System.nanoTime() - until < 0;
                ping[1] = more ? 1 : 0;
                pg.send(ping, 0, 2, peer, TAG);
                pg.recv(ping, 0, 2, peer, TAG);
            } while (more);
        } else {
            do {
                pg.recv(ping, 0, 2, peer, TAG);
                pg.send(ping, 0, 2, peer, TAG);
            } while (ping[1] != 0);
        }
    }

    /** Link kinds travel as floats in the gathered matrix: their ordinal. */
    private static float kindCode(LinkKind k) { return k.ordinal(); }

    private static String kindName(float code) { return LinkKind.values()[(int) code].label(); }

    /** Entry point for each rank started by the launcher: {@code [--report-file F]}. */
    public static void main(String[] args) throws IOException {
        Path report = args.length >= 2 && args[0].equals("--report-file") ? Path.of(args[1]) : null;
        try (ProcessGroup pg = ProcessGroups.initFromEnv()) {
            String table = measure(pg, 1000, 16 << 20, 8);
            if (pg.rank() == 0) {
                if (report != null) Files.writeString(report, table);
                else System.out.print(table);
            }
        }
    }
}
