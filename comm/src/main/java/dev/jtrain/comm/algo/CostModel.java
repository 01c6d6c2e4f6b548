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

    private static final java.util.regex.Pattern FIGURE = java.util.regex.Pattern.compile(
            "(alpha|beta|gamma|chunk)=([0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(us|ms|s|GB/s|MB/s|KiB|MiB)");

    /**
     * The figures in {@link #toString()}'s form, {@code alpha=3.0us beta=2.724GB/s gamma=4.707GB/s chunk=32768KiB}:
     * all four, in any order, separated by spaces; alpha in us, ms or s, beta and gamma in GB/s or MB/s (decimal),
     * chunk in KiB or MiB.
     */
    public static CostModel parse(String text) {
        double alpha = Double.NaN, beta = Double.NaN, gamma = Double.NaN;
        long chunk = -1;
        for (String part : text.trim().split("\\s+")) {
            var m = FIGURE.matcher(part);
            if (!m.matches() || !unitFits(m.group(1), m.group(3))) {
                throw new IllegalArgumentException("cannot read '" + part + "' in link figures '" + text.trim() + "': expected "
                        + "alpha=<latency>us beta=<bandwidth>GB/s gamma=<reduce rate>GB/s chunk=<size>KiB, as a run prints them");
            }
            double v = Double.parseDouble(m.group(2));
            switch (m.group(1)) {
                case "alpha" -> alpha = v * switch (m.group(3)) { case "us" -> 1e-6; case "ms" -> 1e-3; default -> 1; };
                case "beta" -> beta = 1 / (v * (m.group(3).equals("GB/s") ? 1e9 : 1e6));
                case "gamma" -> gamma = 1 / (v * (m.group(3).equals("GB/s") ? 1e9 : 1e6));
                default -> chunk = Math.round(v * (m.group(3).equals("KiB") ? 1024 : 1024 * 1024));
            }
        }
        if (Double.isNaN(alpha) || Double.isNaN(beta) || Double.isNaN(gamma) || chunk < 0) {
            throw new IllegalArgumentException("link figures '" + text.trim() + "' need all of alpha, beta, gamma and chunk, "
                    + "e.g. alpha=3.0us beta=2.724GB/s gamma=4.707GB/s chunk=32768KiB");
        }
        return new CostModel(alpha, beta, gamma, chunk);
    }

    private static boolean unitFits(String figure, String unit) {
        return switch (figure) {
            case "alpha" -> unit.endsWith("s") && !unit.contains("/");
            case "beta", "gamma" -> unit.endsWith("B/s");
            default -> unit.endsWith("iB");
        };
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "alpha=%.1fus beta=%.3fGB/s gamma=%.3fGB/s chunk=%dKiB",
                alphaSeconds * 1e6, 1e-9 / Math.max(betaSecondsPerByte, 1e-30), 1e-9 / Math.max(gammaSecondsPerByte, 1e-30),
                chunkBytes / 1024);
    }
}
