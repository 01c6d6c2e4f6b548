package dev.jtrain.comm;

import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.algo.CostModelProbe.LinkCosts;
import dev.jtrain.comm.store.Store;

import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * The α-β-γ figures a job measured at its first start, kept in the job's store outside any restart attempt's keys,
 * so that a group restarted after a failure reuses them instead of measuring again. Measuring takes a second or more
 * per link class (the transport is warmed up first), and a restart is exactly when that hurts: cold JVMs share the
 * CPUs with their own JIT compilers while the job stands still. The links between the same kind of hosts do not
 * change when a process dies; a group whose link classes the figures do not cover measures as before.
 *
 * <p>Keyed by the number of ranks per host, which decides how many share a host's memory and network interface
 * (and the threads each one runs): a job that continues on fewer hosts with as many ranks on each (jtrain launch
 * --min-nodes) reuses them too, for the link classes they cover. Whether to measure is a collective choice: rank 0 alone looks, and the group start hands
 * its answer to every rank. Rank 0 publishes what it measured after group start. Publishing is best effort: the
 * figures only save time.
 */
final class LinkCostCache {
    private static final int VERSION = 1;
    /** Encoded size: version, which classes are present, then four numbers per class. */
    static final int BYTES = 2 + 2 * 32;

    private LinkCostCache() {}

    static String key(int ranksPerHost) {
        return "jtrain/link-costs/v" + VERSION + "/ranks-per-host" + ranksPerHost;
    }

    /** The figures published under {@code key}, if any (never waits); none when the store cannot say. */
    static Optional<LinkCosts> lookup(Store jobStore, String key) {
        try {
            return Optional.of(decode(jobStore.get(key, 0)));
        } catch (CommException absentUnreachableOrForeign) { // measuring again is always correct
            return Optional.empty();
        }
    }

    /** Keeps {@code costs} for a restart; a store that refuses only costs that restart the measurement. */
    static void publish(Store jobStore, String key, LinkCosts costs) {
        try {
            jobStore.set(key, encode(costs));
        } catch (CommException notKept) {
            // the next start measures again
        }
    }

    static byte[] encode(LinkCosts c) {
        ByteBuffer b = ByteBuffer.allocate(BYTES);
        b.put((byte) VERSION);
        b.put((byte) ((c.intraHost() != null ? 1 : 0) | (c.interHost() != null ? 2 : 0)));
        put(b, c.intraHost());
        put(b, c.interHost());
        return b.array();
    }

    static LinkCosts decode(byte[] bytes) {
        if (bytes.length != BYTES || bytes[0] != VERSION) {
            throw new CommException("link cost figures in the job's store have an unknown format (" + bytes.length
                    + " bytes, version " + (bytes.length > 0 ? bytes[0] : -1) + "): was the job restarted by another jtrain version?");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes, 2, bytes.length - 2);
        CostModel intra = get(b), inter = get(b);
        return new LinkCosts((bytes[1] & 1) != 0 ? intra : null, (bytes[1] & 2) != 0 ? inter : null);
    }

    private static void put(ByteBuffer b, CostModel m) {
        b.putDouble(m == null ? 0 : m.alphaSeconds()).putDouble(m == null ? 0 : m.betaSecondsPerByte())
                .putDouble(m == null ? 0 : m.gammaSecondsPerByte()).putLong(m == null ? 1 : m.chunkBytes());
    }

    private static CostModel get(ByteBuffer b) {
        return new CostModel(b.getDouble(), b.getDouble(), b.getDouble(), b.getLong());
    }
}
