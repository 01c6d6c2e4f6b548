package dev.jtrain.tensor.kernel;

import java.lang.foreign.MemorySegment;

/**
 * Where the operands of a bf16 product come from, and how a block of each is packed into the pair layouts of
 * {@link Bf16Pack}: fp32 arrays (rounded as they are packed), B as the words {@link Bf16#pack} made of it, or bf16
 * values stored as they are in a {@code short[]} (a {@code torch.bfloat16} tensor's or a safetensors BF16 entry's
 * layout). The loop nest of {@link Bf16Workspace} only sees these two seams, so every source gets the same blocking,
 * threading and therefore the same bits for the same values.
 *
 * <p>Threading: an operand is immutable and shared by the threads of one product; each packs into its own buffers.
 */
final class Bf16Operands {
    private Bf16Operands() {}

    /**
     * op(A), m x k: {@code rowMajor} says whether {@code packer} lays panels out row-major (word (r, p) at r * kp + p),
     * else p-major. {@code inPlace}, when not null, is A as the kernel can read it where it is stored.
     */
    record A(boolean rowMajor, APacker packer, AmxPacker amxPacker, InPlace inPlace) {
        void pack(int i0, int p0, int mc, int kc, int[] ap, MemorySegment apSeg, int apOff) {
            packer.pack(i0, p0, mc, kc, ap, apSeg, apOff);
        }

        /** Packs the block into the AMX kernel's panels instead ({@link Bf16AmxPack}), off the heap. */
        void packAmx(int i0, int p0, int mc, int kc, MemorySegment ap, int apOff) {
            amxPacker.pack(i0, p0, mc, kc, ap, apOff);
        }
    }

    /**
     * An A whose stored rows already are the kernel's row-major pairs: bf16 values stored m x k with the row starts and
     * k even, so that values 2p and 2p+1 of a row are the low and high half of one 4-byte word. Word (i, p) of op(A)
     * is word {@code base + i * stride + p} of {@code seg}; panels of MR whole rows can be read there, unpacked.
     */
    record InPlace(MemorySegment seg, long base, int stride) {
        /** The segment from word (i, pair p). */
        MemorySegment at(int i, int p) {
            return seg.asSlice(Integer.BYTES * (base + (long) i * stride + p));
        }
    }

    /** Packs op(A)[i0 : i0+mc, p0 : p0+kc] into {@code ap} from {@code apOff}: ceil(mc / MR) panels of kp * MR words. */
    @FunctionalInterface
    interface APacker {
        void pack(int i0, int p0, int mc, int kc, int[] ap, MemorySegment apSeg, int apOff);
    }

    /** Packs op(A)[i0 : i0+mc, p0 : p0+kc] into the AMX panels of {@code ap} from word {@code apOff}. */
    @FunctionalInterface
    interface AmxPacker {
        void pack(int i0, int p0, int mc, int kc, MemorySegment ap, int apOff);
    }

    /** op(B), k x n. */
    interface B {
        /**
         * Packs op(B)[p0 : p0+kc, j0 : j0+nc] into {@code bp} (on the heap or off it): ceil(nc / NR) panels of kpRows * NR words, pair rows
         * past kp = ceil(kc / 2) zero (kpRows = kp for the AVX-512 kernel, kp rounded up to whole k blocks for AMX).
         */
        void pack(int p0, int j0, int kc, int nc, MemorySegment bp, int kpRows);
    }

    static A fp32A(boolean transA, float[] a, int aOff, int lda) {
        MemorySegment seg = MemorySegment.ofArray(a);
        return new A(Bf16Pack.rowMajorA(transA), (i0, p0, mc, kc, ap, apSeg, apOff) ->
                Bf16Pack.packA(transA, a, seg, aOff, lda, i0, p0, mc, kc, ap, apSeg, apOff),
                (i0, p0, mc, kc, ap, apOff) -> Bf16AmxPack.packA(transA, a, seg, aOff, lda, i0, p0, mc, kc, ap, apOff), null);
    }

    static B fp32B(boolean transB, float[] b, int bOff, int ldb) {
        MemorySegment seg = MemorySegment.ofArray(b);
        return (p0, j0, kc, nc, bp, kpRows) -> Bf16Pack.packB(transB, b, seg, bOff, ldb, p0, j0, kc, nc, bp, kpRows);
    }

    /** B (k x n, not transposed) as the words {@link Bf16#pack} made of it, rows {@code ldb} floats apart. */
    static B packedWords(int[] words, int ldb) {
        return (p0, j0, kc, nc, bp, kpRows) -> Bf16Pack.packBFromWords(words, ldb, p0, j0, kc, nc, bp, kpRows);
    }

    /** op(A) from bf16 values, m x k; read in place where the layout allows ({@link InPlace}). */
    static A bf16A(boolean transA, short[] a, int aOff, int lda, int k) {
        MemorySegment seg = MemorySegment.ofArray(a);
        boolean pairs = !transA && aOff % 2 == 0 && lda % 2 == 0 && k % 2 == 0;
        return new A(Bf16Pack.rowMajorA(transA), (i0, p0, mc, kc, ap, apSeg, apOff) ->
                Bf16Pack.packABf16(transA, a, seg, aOff, lda, i0, p0, mc, kc, ap, apSeg, apOff),
                (i0, p0, mc, kc, ap, apOff) -> Bf16AmxPack.packABf16(transA, a, aOff, lda, i0, p0, mc, kc, ap, apOff),
                pairs ? new InPlace(seg, aOff / 2, lda / 2) : null);
    }

    static B bf16B(boolean transB, short[] b, int bOff, int ldb) {
        MemorySegment seg = MemorySegment.ofArray(b);
        return (p0, j0, kc, nc, bp, kpRows) -> Bf16Pack.packBBf16(transB, b, seg, bOff, ldb, p0, j0, kc, nc, bp, kpRows);
    }
}
