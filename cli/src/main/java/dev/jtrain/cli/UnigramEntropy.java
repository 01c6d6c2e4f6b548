package dev.jtrain.cli;

import dev.jtrain.gpt.data.Tokens;

/**
 * Entropy of the token frequency distribution, in nats: the loss of the best model that ignores context. A model
 * that learned anything beyond token frequencies must beat it.
 */
final class UnigramEntropy {
    private UnigramEntropy() {}

    static double of(Tokens tokens) {
        long n = Math.min(tokens.size(), 5_000_000L);
        long[] counts = new long[1 << 16];
        int[] buf = new int[65536];
        for (long i = 0; i < n; i += buf.length) {
            int len = (int) Math.min(buf.length, n - i);
            tokens.read(i, buf, 0, len);
            for (int k = 0; k < len; k++) counts[buf[k]]++;
        }
        double h = 0;
        for (long c : counts) {
            if (c == 0) continue;
            double p = (double) c / n;
            h -= p * Math.log(p);
        }
        return h;
    }
}
