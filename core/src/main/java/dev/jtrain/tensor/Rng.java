package dev.jtrain.tensor;

/**
 * Seedable, splittable random generator (SplitMix64) whose whole state is one long, so that activation
 * checkpointing can save and restore it to replay the same dropout masks on recompute.
 *
 * <p>Not thread-safe: give each thread (or each rank) its own instance.
 */
public final class Rng {
    private long state;
    private double spareGaussian = Double.NaN;

    public Rng(long seed) {
        this.state = seed;
    }

    public long state() {
        return state;
    }

    public void setState(long state) {
        this.state = state;
        this.spareGaussian = Double.NaN;
    }

    public long nextLong() {
        long z = (state += 0x9E3779B97F4A7C15L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Uniform in [0, 1) with 24 bits, the float mantissa. */
    public float nextFloat() {
        return (nextLong() >>> 40) * 0x1.0p-24f;
    }

    public double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }

    public int nextInt(int bound) {
        if (bound <= 0) throw new IllegalArgumentException("bound must be positive: " + bound);
        return (int) Math.floorMod(nextLong(), (long) bound);
    }

    /** Standard normal via Box-Muller (the pair's second value is kept for the next call). */
    public double nextGaussian() {
        if (!Double.isNaN(spareGaussian)) {
            double g = spareGaussian;
            spareGaussian = Double.NaN;
            return g;
        }
        double u1;
        do {
            u1 = nextDouble();
        } while (u1 <= 1e-300);
        double u2 = nextDouble();
        double r = Math.sqrt(-2 * Math.log(u1));
        spareGaussian = r * Math.sin(2 * Math.PI * u2);
        return r * Math.cos(2 * Math.PI * u2);
    }
}
