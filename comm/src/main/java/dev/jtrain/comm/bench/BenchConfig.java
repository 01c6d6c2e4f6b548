package dev.jtrain.comm.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@link CommBenchmark} measures.
 *
 * @param op         all_reduce, all_gather, reduce_scatter, broadcast or all_to_all
 * @param sizesBytes message sizes, nccl-tests conventions (all-gather: whole output; reduce-scatter: whole input)
 * @param iters      timed iterations per size; 0 picks them like the peer scripts (10 at >= 64 MiB, 20 at >= 16 MiB, else 200)
 * @param warmup     untimed iterations first; 0 picks 2 / 3 / 20 likewise, then a time-based JIT warm-up (CommBenchmark)
 */
public record BenchConfig(String op, List<Long> sizesBytes, int iters, int warmup) {
    public static final List<String> OPS = List.of("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all");

    public BenchConfig {
        op = op.toLowerCase(Locale.ROOT).replace('-', '_');
        if (!OPS.contains(op)) throw new IllegalArgumentException("--op must be one of " + OPS + ": op=" + op);
        if (sizesBytes.isEmpty()) throw new IllegalArgumentException("--sizes gave no sizes");
        sizesBytes = List.copyOf(sizesBytes);
        if (iters < 0 || warmup < 0) throw new IllegalArgumentException("iters and warmup must be >= 0: iters=" + iters + " warmup=" + warmup);
    }

    int itersFor(long bytes) { return iters > 0 ? iters : bytes >= 64 << 20 ? 10 : bytes >= 16 << 20 ? 20 : 200; }

    int warmupFor(long bytes) { return warmup > 0 ? warmup : bytes >= 64 << 20 ? 2 : bytes >= 16 << 20 ? 3 : 20; }

    /**
     * Parses {@code 4K:256M} (powers of {@code factor} from 4 KiB to 256 MiB; {@code 4K:256M:2} sets the factor,
     * default 4) or a comma list {@code 4K,64M}. Suffixes K, M, G are binary (KiB...).
     */
    public static List<Long> parseSizes(String spec) {
        List<Long> out = new ArrayList<>();
        if (spec.contains(":")) {
            String[] p = spec.split(":");
            if (p.length < 2 || p.length > 3) throw new IllegalArgumentException("--sizes MIN:MAX[:FACTOR], got " + spec);
            long lo = parseSize(p[0]), hi = parseSize(p[1]);
            long f = p.length == 3 ? Long.parseLong(p[2]) : 4;
            if (lo <= 0 || hi < lo || f < 2) throw new IllegalArgumentException("--sizes needs 0 < MIN <= MAX and FACTOR >= 2: " + spec);
            for (long s = lo; s <= hi; s *= f) out.add(s);
        } else {
            for (String s : spec.split(",")) out.add(parseSize(s));
        }
        return out;
    }

    public static long parseSize(String s) {
        String t = s.trim().toUpperCase(Locale.ROOT).replace("IB", "").replace("B", "");
        long mult = 1;
        char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
        if (last == 'K' || last == 'M' || last == 'G') {
            mult = last == 'K' ? 1L << 10 : last == 'M' ? 1L << 20 : 1L << 30;
            t = t.substring(0, t.length() - 1);
        }
        try {
            return Math.multiplyExact(Long.parseLong(t), mult);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad size '" + s + "' (e.g. 4K, 64M, 1G)", e);
        }
    }
}
