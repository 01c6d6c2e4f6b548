package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** bf16 rounding: to nearest, ties to even, NaN kept, overflow to infinity; and how CPU flags are read. */
class Bf16Test {
    @Test
    void roundsToNearestTiesToEven() {
        assertThat(Bf16.bits(1f)).isEqualTo(0x3F80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: the tie goes to the even mantissa (1)
        assertThat(Bf16.bits(1f + 0x1p-8f)).isEqualTo(0x3F80);
        // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up
        assertThat(Bf16.bits(1f + 3 * 0x1p-8f)).isEqualTo(0x3F82);
        // just above the halfway point rounds up, just below down
        assertThat(Bf16.bits(Math.nextUp(1f + 0x1p-8f))).isEqualTo(0x3F81);
        assertThat(Bf16.bits(Math.nextDown(1f + 0x1p-8f))).isEqualTo(0x3F80);
        assertThat(Bf16.bits(-2.5f)).isEqualTo(0xC020);
        assertThat(Bf16.round(3.14159265f)).isEqualTo(3.140625f);
    }

    @Test
    void specialValues() {
        assertThat(Bf16.toFloat(Bf16.bits(Float.NaN))).isNaN();
        assertThat(Bf16.toFloat(Bf16.bits(Float.intBitsToFloat(0x7F80_0001)))).as("a NaN whose payload is in the low half").isNaN();
        assertThat(Bf16.round(Float.POSITIVE_INFINITY)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(Bf16.round(Float.MAX_VALUE)).as("rounds past the largest bf16").isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(Bf16.round(-0f)).isEqualTo(-0f);
    }

    @Test
    void cpuFlagsAreRead() {
        assertThat(CpuFeatures.parse("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx2\n").avx512bf16()).isTrue();
        assertThat(CpuFeatures.parse("flags\t\t: fpu avx512f avx2\n").avx512bf16()).isFalse();
        assertThat(CpuFeatures.parse("nothing here").avx512bf16()).isFalse();
    }
}
