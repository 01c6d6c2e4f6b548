package dev.jtrain.tensor.kernel;

import static dev.jtrain.tensor.kernel.Bf16AmxKernel.A_BLOCK_WORDS;
import static dev.jtrain.tensor.kernel.Bf16AmxKernel.BLOCK_PAIRS;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Packs blocks of op(A) into the panels the AMX kernel ({@link Bf16AmxKernel}) reads, rounding fp32 to bf16 on the
 * way as {@link Bf16Pack} does. B needs no layout of its own: an AMX B tile (16 pair rows of 16 columns, the two k of
 * a pair side by side) is 64 bytes of each of 16 rows of a {@link Bf16Pack} B panel, so B is packed by {@link
 * Bf16Pack#packB} into panels whose pair rows are padded to whole k blocks.
 *
 * <pre>
 * packed A block: panel i (rows 32 i ..) = kblocks blocks of 32 x 16 words; block b holds pairs 16 b .. 16 b + 15,
 *                 row r's at word 16 r of the block, so each 16-row tile is one contiguous 1 KiB
 * </pre>
 * The k of a block past kc are zero in every row that is packed, and so are B's pair rows past kc, since tile
 * products run whole blocks (zero times zero adds nothing; a stale NaN on either side would). Rows of a last panel
 * past mc may hold anything: they only reach their own rows of C, which are never written back.
 *
 * <p>Threading: stateless; each thread packs into its own buffers.
 */
final class Bf16AmxPack {
    /** Rows of an A panel (two tiles of 16). */
    static final int MR = 32;
    /** k values per block (16 pairs). */
    static final int KB = 2 * BLOCK_PAIRS;

    private static final VectorSpecies<Short> S = ShortVector.SPECIES_512;
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();

    private Bf16AmxPack() {}

    /** Blocks of 32 k values a panel of depth {@code kc} holds. */
    static int kblocks(int kc) {
        return (kc + KB - 1) / KB;
    }

    /** Words of one packed A panel of depth {@code kc}. */
    static int panelWords(int kc) {
        return kblocks(kc) * A_BLOCK_WORDS;
    }

    /**
     * Packs op(A)[i0 : i0+mc, p0 : p0+kc] into {@code ap} (off the heap, 64-byte aligned: a tile row that straddles two
     * cache lines halves the kernel's speed) from word {@code apOff}: ceil(mc / 32) panels of {@link #panelWords}.
     * A stored m x k through {@link Bf16AmxKernel#rows}, A stored k x m through {@link Bf16AmxKernel#pairsT}; a last
     * partial block of k here.
     */
    static void packA(boolean transA, float[] a, MemorySegment aSeg, int aOff, int lda, int i0, int p0, int mc, int kc,
                      MemorySegment ap, int apOff) {
        int full = kc / KB, panelWords = panelWords(kc);
        for (int t = 0, r0 = 0; r0 < mc; t++, r0 += MR) {
            int rows = Math.min(MR, mc - r0), base = apOff + t * panelWords;
            if (!transA) {
                int src = aOff + (i0 + r0) * lda + p0;
                if (full > 0) Bf16AmxKernel.rows(Bf16Pack.slice(aSeg, src, Float.BYTES), lda, Bf16Pack.slice(ap, base, Integer.BYTES), rows, full);
                if (full * KB < kc) {
                    for (int r = 0; r < rows; r++) {
                        int row = src + r * lda;
                        lastBlock(full, kc, ap, base, r, q -> a[row + q]);
                    }
                }
                continue;
            }
            int col = aOff + p0 * lda + i0 + r0; // column r0 of the block: row r0 of op(A)
            for (int h = 0; h < 2 && 16 * h < rows; h++) {
                int cols = Math.min(16, rows - 16 * h);
                if (full > 0) {
                    Bf16AmxKernel.pairsT(Bf16Pack.slice(aSeg, col + 16 * h, Float.BYTES), lda,
                            Bf16Pack.slice(ap, base + 16 * h * BLOCK_PAIRS, Integer.BYTES), full, (1 << cols) - 1);
                }
            }
            if (full * KB < kc) {
                for (int r = 0; r < rows; r++) {
                    int c = col + r;
                    lastBlock(full, kc, ap, base, r, q -> a[c + q * lda]);
                }
            }
        }
    }

    /**
     * {@link #packA} from bf16 values ({@code short[]}, rows {@code lda} values apart): copied (A stored m x k, where a
     * row's values already sit in pairs along k) or paired two rows at a time (A stored k x m), nothing rounded.
     */
    static void packABf16(boolean transA, short[] a, int aOff, int lda, int i0, int p0, int mc, int kc, MemorySegment ap, int apOff) {
        int panelWords = panelWords(kc), blocks = kblocks(kc), full = transA ? 0 : kc / KB;
        for (int t = 0, r0 = 0; r0 < mc; t++, r0 += MR) {
            int rows = Math.min(MR, mc - r0), base = apOff + t * panelWords;
            for (int r = 0; r < rows; r++) {
                int i = i0 + r0 + r;
                // a whole block of a row stored m x k is its 32 values as they are: one vector copy
                for (int b = 0, src = aOff + i * lda + p0; b < full; b++, src += KB) {
                    ShortVector.fromArray(S, a, src).reinterpretAsInts()
                            .intoMemorySegment(ap, 4L * (base + b * A_BLOCK_WORDS + r * BLOCK_PAIRS), ORDER);
                }
                for (int b = full; b < blocks; b++) {
                    int at = base + b * A_BLOCK_WORDS + r * BLOCK_PAIRS;
                    for (int w = 0; w < BLOCK_PAIRS; w++) {
                        int q = b * KB + 2 * w;
                        int lo = q < kc ? value(a, transA, aOff, lda, i, p0 + q) : 0;
                        int hi = q + 1 < kc ? value(a, transA, aOff, lda, i, p0 + q + 1) : 0;
                        Bf16Pack.set(ap, at + w, lo | hi << 16);
                    }
                }
            }
        }
    }

    private static int value(short[] a, boolean transA, int aOff, int lda, int i, int p) {
        return (transA ? a[aOff + p * lda + i] : a[aOff + i * lda + p]) & 0xFFFF;
    }

    /** The fp32 value of op(A) at k offset q (from the block's start) in one row. */
    @FunctionalInterface
    private interface Row {
        float at(int q);
    }

    /** Row r's words of the last, partial k block {@code b}: its k past kc zero. */
    private static void lastBlock(int b, int kc, MemorySegment ap, int base, int r, Row row) {
        int at = base + b * A_BLOCK_WORDS + r * BLOCK_PAIRS;
        Bf16Pack.zero(ap, at, at + BLOCK_PAIRS);
        for (int w = 0, q = b * KB; w < BLOCK_PAIRS && q < kc; w++, q += 2) {
            Bf16Pack.set(ap, at + w, Bf16.bits(row.at(q)) | (q + 1 < kc ? Bf16.bits(row.at(q + 1)) << 16 : 0));
        }
    }
}
