package dev.jtrain.comm.bench;

import java.util.Locale;

/**
 * One line of the report (nccl-tests conventions): algbw = size / time; busbw = algbw x the op's factor
 * (all-reduce 2(p-1)/p, all-gather, reduce-scatter and all-to-all (p-1)/p, broadcast 1), which makes figures
 * comparable to the link bandwidth whatever p is.
 *
 * @param medianUs    median over iterations of the slowest rank's time of one op (each iteration starts at a barrier)
 * @param pipelinedUs back-to-back ops without barriers, total / iterations
 */
public record BenchResult(String op, int ranks, String transport, long bytes, long count, String algorithm,
                          double medianUs, double pipelinedUs, int iters) {
    public double busFactor() {
        return switch (op) {
            case "all_reduce" -> 2.0 * (ranks - 1) / ranks;
            case "broadcast" -> 1.0;
            default -> (ranks - 1.0) / ranks;
        };
    }

    public double algbwGBs() { return bytes / (medianUs * 1e-6) / 1e9; }

    public double busbwGBs() { return algbwGBs() * busFactor(); }

    public double pipelinedBusbwGBs() { return bytes / (pipelinedUs * 1e-6) / 1e9 * busFactor(); }

    static String header() {
        return String.format(Locale.ROOT, "%12s %12s %-17s %11s %9s %9s %9s %11s %9s %6s",
                "size(B)", "count", "algorithm", "time(us)", "algbw", "busbw", "busbw", "pipe(us)", "pipebus", "iters")
                + "\n" + String.format(Locale.ROOT, "%12s %12s %-17s %11s %9s %9s %9s %11s %9s %6s",
                "", "(elements)", "", "median", "(GB/s)", "(GB/s)", "(Gbit/s)", "", "(GB/s)", "");
    }

    String row() {
        return String.format(Locale.ROOT, "%12d %12d %-17s %11.1f %9.3f %9.3f %9.2f %11.1f %9.3f %6d",
                bytes, count, algorithm, medianUs, algbwGBs(), busbwGBs(), busbwGBs() * 8, pipelinedUs, pipelinedBusbwGBs(), iters);
    }

    String json() {
        return String.format(Locale.ROOT, "{\"op\":\"%s\",\"ranks\":%d,\"transport\":\"%s\",\"bytes\":%d,\"count\":%d,"
                        + "\"algorithm\":\"%s\",\"time_us\":%.3f,\"algbw_gbs\":%.4f,\"busbw_gbs\":%.4f,\"busbw_gbits\":%.3f,"
                        + "\"pipelined_time_us\":%.3f,\"pipelined_busbw_gbs\":%.4f,\"iters\":%d}",
                op, ranks, transport, bytes, count, algorithm, medianUs, algbwGBs(), busbwGBs(), busbwGBs() * 8,
                pipelinedUs, pipelinedBusbwGBs(), iters);
    }
}
