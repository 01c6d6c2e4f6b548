package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * bfloat16: the upper 16 bits of an IEEE float (8 exponent bits, 7 stored mantissa bits), so a float converts by
 * rounding away its low half. Rounding is to nearest, ties to even, as {@code vcvtneps2bf16} and PyTorch do; a NaN
 * stays a (quiet) NaN instead of rounding into an infinity. Unit roundoff 2^-8.
 *
 * <p>Threading: stateless; {@link #pack} and {@link #unpack} split large arrays over {@link Parallel}'s threads.
 */
public final class Bf16 {
    /** Unit roundoff of bf16: a rounded value is within a relative 2^-8 of the float it came from. */
    public static final double UNIT_ROUNDOFF = 0x1p-8;

    private Bf16() {}

    /** The bf16 nearest {@code x}, as its 16 bits in the low half of an int. */
    public static int bits(float x) {
        int b = Float.floatToRawIntBits(x);
        if ((b & 0x7FFF_FFFF) > 0x7F80_0000) return (b >>> 16) | 0x40; // NaN: keep it, quiet
        return (b + 0x7FFF + ((b >>> 16) & 1)) >>> 16;
    }

    /** The float whose upper half is {@code bits}. */
    public static float toFloat(int bits) {
        return Float.intBitsToFloat(bits << 16);
    }

    /** {@code x} rounded to bf16 precision (exactly representable in bf16). */
    public static float round(float x) {
        return toFloat(bits(x));
    }

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    /** The bf16 values (bits) of {@code n} floats from {@code src[off]}, rounded to nearest even. */
    public static short[] toBf16(float[] src, int off, int n) {
        inside("bf16 toBf16", "the source floats", off, n, src.length);
        short[] out = new short[n];
        for (int i = 0; i < n; i++) out[i] = (short) bits(src[off + i]);
        return out;
    }

    /**
     * {@code n} floats from {@code src[off]} rounded to bf16 precision as {@link #round} rounds them, into
     * {@code dst[dstOff]} as floats (the two ranges may be the same), on the calling thread: whole vectors, then the
     * ragged end one by one.
     */
    public static void roundInto(float[] src, int off, float[] dst, int dstOff, int n) {
        inside("bf16 round", "the source floats", off, n, src.length);
        inside("bf16 round", "the destination floats", dstOff, n, dst.length);
        int i = 0;
        for (int end = n - L; i <= end; i += L) {
            round(FloatVector.fromArray(F, src, off + i)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats()
                    .intoArray(dst, dstOff + i);
        }
        for (; i < n; i++) dst[dstOff + i] = round(src[off + i]);
    }

    /** {@code n} bf16 values from {@code src[off]} widened to fp32 (exactly). */
    public static float[] widen(short[] src, int off, int n) {
        inside("bf16 widen", "the source values", off, n, src.length);
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = toFloat(src[off + i] & 0xFFFF);
        return out;
    }

    private static final int L = F.length(), BLOCK = 2 * L;
    /** Blocks per parallel chunk: a chunk moves at least 64K floats, so splitting pays for the hand-off. */
    private static final int GRAIN = 65536 / BLOCK;

    /** Floats per packing block (2L). */
    public static int packBlock() {
        return BLOCK;
    }

    /** Words {@link #pack} writes for n floats: L per block of 2L (L = lanes of the preferred vector), the last padded. */
    public static int packedWords(int n) {
        return (n + BLOCK - 1) / BLOCK * L;
    }

    /**
     * n floats from {@code src[off]} stored as bf16, two per int, rounded as {@link #bits}. Within each block of 2L
     * floats, word i holds element i in its low half and element i + L in its high half, so both pack and
     * {@link #unpack} move whole vectors with no interleaving shuffle. The layout depends on the vector width, so
     * words are unpacked by the process that packed them (they are never stored or sent).
     */
    public static void pack(float[] src, int off, int n, int[] dst) {
        pack(src, off, n, dst, 0);
    }

    /**
     * {@link #pack} into {@code dst} from word {@code dstOff}: arrays packed piece by piece read back as one when every
     * piece but the last is a multiple of {@link #packBlock()} floats and starts at word (floats before it) / 2.
     */
    public static void pack(float[] src, int off, int n, int[] dst, int dstOff) {
        inside("bf16 pack", "the source floats", off, n, src.length);
        inside("bf16 pack", "the packed words", dstOff, packedWords(n), dst.length);
        int full = n / BLOCK;
        Parallel.forRange(full, GRAIN, (lo, hi) -> {
            for (int blk = lo; blk < hi; blk++) {
                int s = off + blk * BLOCK;
                IntVector lo16 = round(FloatVector.fromArray(F, src, s));
                IntVector hi16 = round(FloatVector.fromArray(F, src, s + L));
                lo16.or(hi16.lanewise(VectorOperators.LSHL, 16)).intoArray(dst, dstOff + blk * L);
            }
        });
        int s = off + full * BLOCK, rest = n - full * BLOCK;
        for (int i = 0; i < L && rest > 0; i++) {
            int lo = i < rest ? bits(src[s + i]) : 0, hi = i + L < rest ? bits(src[s + i + L]) : 0;
            dst[dstOff + full * L + i] = lo | hi << 16;
        }
    }

    /** The n floats {@link #pack} stored, widened back to fp32 (exactly) into {@code dst[off]}. */
    public static void unpack(int[] src, int n, float[] dst, int off) {
        inside("bf16 unpack", "the packed words", 0, n < 0 ? n : packedWords(n), src.length);
        inside("bf16 unpack", "the destination floats", off, n, dst.length);
        int full = n / BLOCK;
        Parallel.forRange(full, GRAIN, (lo, hi) -> unpack(src, n, lo * BLOCK, (hi - lo) * BLOCK, dst, off + lo * BLOCK));
        unpack(src, n, full * BLOCK, n - full * BLOCK, dst, off + full * BLOCK);
    }

    /**
     * Widens floats [from, from + count) of an n-float array that {@link #pack} stored into {@code dst[off]}, on the
     * calling thread: for a kernel that reads a saved tensor in cache-sized pieces. {@code from} is a multiple of
     * {@link #packBlock()}.
     */
    public static void unpack(int[] src, int n, int from, int count, float[] dst, int off) {
        if (from % BLOCK != 0 || from < 0 || count < 0 || (long) from + count > n) {
            throw new IllegalArgumentException("bf16 unpack of [" + from + ", " + (from + count) + ") of " + n
                    + " floats: the start must be a multiple of " + BLOCK + " and the range inside the array");
        }
        inside("bf16 unpack", "the packed words", 0, packedWords(from + count), src.length);
        inside("bf16 unpack", "the destination floats", off, count, dst.length);
        int blk = from / BLOCK, end = (from + count) / BLOCK, d = off;
        for (; blk < end; blk++, d += BLOCK) {
            IntVector w = IntVector.fromArray(I, src, blk * L);
            w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, d);
            w.and(0xFFFF0000).reinterpretAsFloats().intoArray(dst, d + L);
        }
        for (int i = 0; i < from + count - end * BLOCK; i++) {
            int w = src[end * L + i % L];
            dst[d + i] = toFloat(i < L ? w & 0xFFFF : w >>> 16);
        }
    }

    /** {@link #bits} on every lane: round to nearest even, a NaN kept quiet. */
    private static IntVector round(FloatVector x) {
        IntVector b = x.reinterpretAsInts();
        IntVector rounded = b.add(0x7FFF).add(b.lanewise(VectorOperators.LSHR, 16).and(1)).lanewise(VectorOperators.LSHR, 16);
        VectorMask<Integer> nan = b.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000);
        return rounded.blend(b.lanewise(VectorOperators.LSHR, 16).or(0x40), nan);
    }

    /** Fails unless [off, off + count) lies inside an array of {@code length} elements. */
    private static void inside(String op, String what, int off, int count, int length) {
        if (off < 0 || count < 0 || (long) off + count > length) {
            throw new IllegalArgumentException(op + ": " + what + " [" + off + ", " + ((long) off + count) + ") are not inside "
                    + "an array of " + length + (count < 0 ? " (negative count " + count + ")" : ""));
        }
    }
}
