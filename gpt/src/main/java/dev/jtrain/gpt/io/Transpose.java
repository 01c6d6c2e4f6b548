package dev.jtrain.gpt.io;

/** Out-of-place 2-D transpose of row-major float arrays, in cache-sized tiles. */
public final class Transpose {
    /** 32x32 floats = 4 KiB per tile side: source rows and destination rows both stay in L1. */
    private static final int TILE = 32;

    private Transpose() {
    }

    /**
     * {@code dst[dOff + c*rows + r] = src[sOff + r*cols + c]}: src is (rows, cols), dst becomes (cols, rows).
     */
    public static void transpose(float[] src, int sOff, int rows, int cols, float[] dst, int dOff) {
        long n = (long) rows * cols;
        if (rows < 0 || cols < 0 || sOff < 0 || dOff < 0 || sOff + n > src.length || dOff + n > dst.length)
            throw new IllegalArgumentException("transpose out of bounds: rows=" + rows + ", cols=" + cols + ", sOff=" + sOff
                    + ", src.length=" + src.length + ", dOff=" + dOff + ", dst.length=" + dst.length);
        for (int r0 = 0; r0 < rows; r0 += TILE) {
            int r1 = Math.min(rows, r0 + TILE);
            for (int c0 = 0; c0 < cols; c0 += TILE) {
                int c1 = Math.min(cols, c0 + TILE);
                for (int r = r0; r < r1; r++)
                    for (int c = c0; c < c1; c++) dst[dOff + c * rows + r] = src[sOff + r * cols + c];
            }
        }
    }

    public static float[] transpose(float[] src, int rows, int cols) {
        float[] dst = new float[rows * cols];
        transpose(src, 0, rows, cols, dst, 0);
        return dst;
    }
}
