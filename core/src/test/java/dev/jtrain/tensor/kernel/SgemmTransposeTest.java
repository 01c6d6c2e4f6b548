package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The machine-code transposing pack against its definition, at offsets into whole arrays, and its bounds checks. */
class SgemmTransposeTest {
    @Test
    void packsTheDefinedTransposeAtOffsetsAndWritesNothingElse() {
        Assumptions.assumeTrue(SgemmTranspose.available(), "no transposing pack in machine code for this machine's panels");
        int block = SgemmTranspose.BLOCK, nr = SgemmKernel.NR;
        SplittableRandom rnd = new SplittableRandom(20261203L);
        for (int blocks : new int[] {1, 3}) {
            for (int groups = 1; groups * block <= nr; groups++) {
                int ld = blocks * block + 5, srcOff = 3, dstOff = 7;
                float[] src = new float[srcOff + groups * block * ld + 2];
                for (int i = 0; i < src.length; i++) src[i] = (float) rnd.nextGaussian();
                float[] dst = new float[dstOff + blocks * block * nr + 3];
                java.util.Arrays.fill(dst, -9f);
                float[] expected = dst.clone();
                for (int g = 0; g < groups; g++)
                    for (int b = 0; b < blocks; b++)
                        for (int j = 0; j < block; j++)
                            for (int p = 0; p < block; p++)
                                expected[dstOff + (block * b + p) * nr + block * g + j] = src[srcOff + (block * g + j) * ld + block * b + p];
                SgemmTranspose.cols(MemorySegment.ofArray(src), srcOff, ld, MemorySegment.ofArray(dst), dstOff, blocks, groups);
                assertThat(dst).as("blocks=%d groups=%d", blocks, groups).isEqualTo(expected);
            }
        }
    }

    @Test
    void rowsOrAPanelPastTheirArrayAreRefusedBeforeTheMachineCodeRuns() {
        Assumptions.assumeTrue(SgemmTranspose.available(), "no transposing pack in machine code for this machine's panels");
        int block = SgemmTranspose.BLOCK, nr = SgemmKernel.NR, ld = block;
        float[] src = new float[block * ld], dst = new float[block * nr];
        MemorySegment s = MemorySegment.ofArray(src), d = MemorySegment.ofArray(dst);
        SgemmTranspose.cols(s, 0, ld, d, 0, 1, 1); // exactly fits
        java.util.Arrays.fill(dst, 5f);
        assertThatThrownBy(() -> SgemmTranspose.cols(s, 1, ld, d, 0, 1, 1))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("source rows");
        assertThatThrownBy(() -> SgemmTranspose.cols(s, 0, ld, d, nr - block + 1, 1, 1))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("panel");
        assertThatThrownBy(() -> SgemmTranspose.cols(s, 0, ld, d, 0, 2, 1))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(dst).containsOnly(5f);
    }
}
