package dev.jtrain.comm.algo;

import java.util.Locale;

/**
 * The alpha-beta-gamma model of collective cost (Hockney; Thakur, Rabenseifner and Gropp, "Optimization of
 * Collective Communication Operations in MPICH", 2005): sending n bytes costs {@code alpha + n*beta}, reducing n
 * bytes locally costs {@code n*gamma}.
 *
 * @param alphaSeconds     latency of one message
 * @param betaSecondsPerByte   transfer time per byte (1 / bandwidth)
 * @param gammaSecondsPerByte  local reduction time per byte
 * @param chunkBytes       pipelining/chunk size the algorithms use; adds alpha per chunk
 */
public record CostModel(double alphaSeconds, double betaSecondsPerByte, double gammaSecondsPerByte, long chunkBytes) {
    public CostModel {
        if (!(alphaSeconds >= 0) || !(betaSecondsPerByte >= 0) || !(gammaSecondsPerByte >= 0) || chunkBytes <= 0) {
            throw new IllegalArgumentException("cost model needs non-negative figures: alphaSeconds=" + alphaSeconds
                    + " betaSecondsPerByte=" + betaSecondsPerByte + " gammaSecondsPerByte=" + gammaSecondsPerByte
                    + " chunkBytes=" + chunkBytes);
        }
    }

    /** Figures typical of shared memory on one host (5 us, 5 GB/s, 10 GB/s reduce) for when nothing was measured. */
    public static CostModel typicalSharedMemory(long chunkBytes) { return new CostModel(5e-6, 2e-10, 1e-10, chunkBytes); }

    /** Number of chunks a message of {@code bytes} is cut into (at least 1). */
    public long chunks(double bytes) { return Math.max(1, (long) Math.ceil(bytes / chunkBytes)); }

    /** Time of one message of {@code bytes}, sent as chunks. */
    public double message(double bytes) { return chunks(bytes) * alphaSeconds + bytes * betaSecondsPerByte; }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "alpha=%.1fus beta=%.3fGB/s gamma=%.3fGB/s chunk=%dKiB",
                alphaSeconds * 1e6, 1e-9 / Math.max(betaSecondsPerByte, 1e-30), 1e-9 / Math.max(gammaSecondsPerByte, 1e-30),
                chunkBytes / 1024);
    }
}
