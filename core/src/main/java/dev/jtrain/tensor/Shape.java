package dev.jtrain.tensor;

import java.util.Arrays;

/** Static helpers for shapes and strides (row-major, int-sized: one tensor holds at most 2^31-1 elements). */
public final class Shape {
    private Shape() {}

    public static int numel(int[] shape) {
        long n = 1;
        for (int d : shape) {
            if (d < 0) throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            n *= d;
        }
        if (n > Integer.MAX_VALUE) throw new IllegalArgumentException("tensor too large: shape=" + Arrays.toString(shape));
        return (int) n;
    }

    public static int[] contiguousStrides(int[] shape) {
        int[] s = new int[shape.length];
        int acc = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= Math.max(shape[i], 1);
        }
        return s;
    }

    /** NumPy broadcasting: align trailing dimensions; each pair must be equal or one of them 1. */
    public static int[] broadcast(int[] a, int[] b) {
        int n = Math.max(a.length, b.length);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            int da = i < n - a.length ? 1 : a[i - (n - a.length)];
            int db = i < n - b.length ? 1 : b[i - (n - b.length)];
            if (da != db && da != 1 && db != 1)
                throw new IllegalArgumentException("shapes not broadcastable: " + Arrays.toString(a) + " vs " + Arrays.toString(b));
            out[i] = Math.max(da, db);
        }
        return out;
    }

    /** Strides that read {@code shape}/{@code strides} as if broadcast to {@code target} (0 on broadcast dims). */
    public static int[] broadcastStrides(int[] shape, int[] strides, int[] target) {
        int[] out = new int[target.length];
        int off = target.length - shape.length;
        for (int i = 0; i < target.length; i++) {
            if (i < off) out[i] = 0;
            else out[i] = shape[i - off] == 1 && target[i] != 1 ? 0 : strides[i - off];
        }
        return out;
    }

    /** Resolves a single -1 in a reshape target against the element count. */
    public static int[] inferReshape(int numel, int... shape) {
        int[] out = shape.clone();
        int infer = -1;
        long known = 1;
        for (int i = 0; i < out.length; i++) {
            if (out[i] == -1) {
                if (infer >= 0) throw new IllegalArgumentException("only one -1 allowed in reshape " + Arrays.toString(shape));
                infer = i;
            } else known *= out[i];
        }
        if (infer >= 0) {
            if (known == 0 || numel % known != 0)
                throw new IllegalArgumentException("cannot reshape " + numel + " elements to " + Arrays.toString(shape));
            out[infer] = (int) (numel / known);
        }
        if (numel(out) != numel)
            throw new IllegalArgumentException("cannot reshape " + numel + " elements to " + Arrays.toString(shape));
        return out;
    }

    public static String str(int[] shape) {
        return Arrays.toString(shape);
    }
}
