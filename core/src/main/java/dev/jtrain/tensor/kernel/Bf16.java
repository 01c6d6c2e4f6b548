package dev.jtrain.tensor.kernel;

/**
 * bfloat16: the upper 16 bits of an IEEE float (8 exponent bits, 7 stored mantissa bits), so a float converts by
 * rounding away its low half. Rounding is to nearest, ties to even, as {@code vcvtneps2bf16} and PyTorch do; a NaN
 * stays a (quiet) NaN instead of rounding into an infinity. Unit roundoff 2^-8.
 *
 * <p>Threading: stateless.
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
}
