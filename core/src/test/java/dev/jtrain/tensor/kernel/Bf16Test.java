package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

    /** pack/unpack keep exactly what {@link Bf16#round} gives, for any length (vector blocks and the tail). */
    @Test
    void packedArraysReadBackAsTheRoundedValues() {
        java.util.Random r = new java.util.Random(11);
        int block = Bf16.packBlock();
        for (int n : new int[]{1, 7, block - 1, block, block + 3, 5 * block + 17, 300_001}) {
            float[] x = new float[n + 3];
            for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(7) - 3));
            x[3] = Float.NaN;
            int[] words = new int[Bf16.packedWords(n)];
            Bf16.pack(x, 3, n, words);
            float[] back = new float[n + 2];
            back[0] = back[n + 1] = 42f;
            Bf16.unpack(words, n, back, 1);
            assertThat(back[0]).as("nothing written before").isEqualTo(42f);
            assertThat(back[n + 1]).as("nothing written after").isEqualTo(42f);
            assertThat(back[1]).isNaN();
            for (int i = 1; i < n; i++)
                assertThat(back[i + 1]).as("n=%d, element %d", n, i).isEqualTo(Bf16.round(x[i + 3]));
        }
    }

    /**
     * roundInto gives {@link Bf16#round}'s bits for every element, vector lanes and ragged end alike, in place or not:
     * ties, NaNs, infinities, overflow, subnormals and signed zeros included.
     */
    @Test
    void roundIntoGivesTheScalarRoundingsBitForBit() {
        java.util.Random r = new java.util.Random(13);
        float[] special = {Float.NaN, Float.intBitsToFloat(0x7F80_0001), Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
                Float.MAX_VALUE, -0f, 0f, Float.MIN_VALUE, 1f + 0x1p-8f, 1f + 3 * 0x1p-8f, -2.5f, 0x1p-130f};
        for (int n : new int[]{0, 1, 5, 16, 31, 33, 1000}) {
            float[] x = new float[n + 4];
            for (int i = 0; i < x.length; i++) {
                x[i] = i % 3 == 0 ? special[(i / 3) % special.length]
                        : Float.intBitsToFloat(r.nextInt()); // any bit pattern, NaNs with payloads included
            }
            float[] out = new float[n + 2];
            out[0] = out[n + 1] = 42f;
            Bf16.roundInto(x, 2, out, 1, n);
            assertThat(out[0]).as("nothing written before").isEqualTo(42f);
            assertThat(out[n + 1]).as("nothing written after").isEqualTo(42f);
            float[] inPlace = x.clone();
            Bf16.roundInto(inPlace, 2, inPlace, 2, n);
            for (int i = 0; i < n; i++) {
                int expect = Float.floatToRawIntBits(Bf16.round(x[i + 2]));
                assertThat(Float.floatToRawIntBits(out[i + 1])).as("n=%d, element %d (%s)", n, i, x[i + 2]).isEqualTo(expect);
                assertThat(Float.floatToRawIntBits(inPlace[i + 2])).as("in place, n=%d, element %d", n, i).isEqualTo(expect);
            }
        }
    }

    /** Pieces packed separately, each a whole number of blocks, read back as one array. */
    @Test
    void piecesPackedApartReadBackAsOne() {
        int block = Bf16.packBlock(), n = 3 * block + 5;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = i * 0.37f - 11f;
        int[] whole = new int[Bf16.packedWords(n)], pieces = new int[Bf16.packedWords(n)];
        Bf16.pack(x, 0, n, whole);
        Bf16.pack(x, 0, 2 * block, pieces, 0);
        Bf16.pack(x, 2 * block, n - 2 * block, pieces, block);
        assertThat(pieces).isEqualTo(whole);
    }

    @Test
    void cpuFlagsAreRead() {
        assertThat(CpuFeatures.parse("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx2\n").avx512bf16()).isTrue();
        assertThat(CpuFeatures.parse("flags\t\t: fpu avx512f avx2\n").avx512bf16()).isFalse();
        assertThat(CpuFeatures.parse("nothing here").avx512bf16()).isFalse();
    }

    /** Ranges outside their arrays are refused with what and where, before any vector load or parallel hand-off. */
    @Test
    void rangesOutsideTheirArraysAreRefusedNamingThem() {
        int block = Bf16.packBlock(), n = 3 * block + 5;
        float[] x = new float[n];
        int[] words = new int[Bf16.packedWords(n)];
        assertThatThrownBy(() -> Bf16.pack(x, 1, n, words, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bf16 pack: the source floats [1, " + (n + 1) + ") are not inside an array of " + n);
        assertThatThrownBy(() -> Bf16.pack(x, 0, n, words, 1)).hasMessageStartingWith("bf16 pack: the packed words [1, ");
        assertThatThrownBy(() -> Bf16.unpack(new int[words.length - 1], n, new float[n], 0))
                .hasMessageStartingWith("bf16 unpack: the packed words");
        assertThatThrownBy(() -> Bf16.unpack(words, n, new float[n], 1)).hasMessageStartingWith("bf16 unpack: the destination floats");
        assertThatThrownBy(() -> Bf16.unpack(words, n, 0, block + 1, new float[block], 0))
                .hasMessageStartingWith("bf16 unpack: the destination floats");
        assertThatThrownBy(() -> Bf16.unpack(words, n, block, Integer.MAX_VALUE, new float[n], 0))
                .hasMessageContaining("the range inside the array");
        assertThatThrownBy(() -> Bf16.toBf16(x, -1, 2)).hasMessageStartingWith("bf16 toBf16: the source floats [-1, 1)");
        assertThatThrownBy(() -> Bf16.widen(new short[4], 2, 3)).hasMessageStartingWith("bf16 widen: the source values [2, 5)");
        Bf16.pack(x, 0, n, words, 0); // and the exact fits pass
        Bf16.unpack(words, n, new float[n], 0);
    }
}
