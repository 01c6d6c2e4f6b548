package dev.jtrain.tensor.kernel;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector functions whose results do not depend on the JIT tier. {@code reduceLanes(ADD)} leaves the summation order
 * unspecified and the interpreter and C2 do use different orders; {@code lanewise(EXP/TANH)} call SVML when compiled
 * and a scalar fallback otherwise. Either makes a training step's last bits depend on when HotSpot compiles a kernel,
 * which breaks bitwise-exact resume and recompute (activation checkpointing). Everything here is built from
 * correctly rounded IEEE operations (add, mul, fma, div) in a fixed order, so every tier gives the same bits.
 */
public final class VectorMath {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final float LOG2E = 1.44269504088896341f;
    private static final float LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
    private static final float MAGIC = 12582912f; // 1.5·2^23: adding it rounds to the nearest integer (in the low mantissa bits)
    private static final int MAGIC_BITS = Float.floatToRawIntBits(MAGIC);
    private static final float EXP_HI = 88.37626f, EXP_LO = -87.33654f; // exp stays finite and normal in between

    private VectorMath() {}

    /** Sum of the lanes, left to right. */
    public static float sum(FloatVector v) {
        float s = 0f;
        for (int i = 0; i < v.length(); i++) s += v.lane(i);
        return s;
    }

    /**
     * e^x, Cephes expf's method: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in two for an exact product), a degree-6
     * polynomial for e^r, and 2^n built in the exponent bits. Max error ~2 ulp; inputs clamped to [-87.3, 88.4].
     */
    public static FloatVector exp(FloatVector x) {
        x = x.max(EXP_LO).min(EXP_HI);
        FloatVector t = x.fma(FloatVector.broadcast(x.species(), LOG2E), FloatVector.broadcast(x.species(), MAGIC));
        FloatVector n = t.sub(MAGIC);
        FloatVector r = n.fma(FloatVector.broadcast(x.species(), -LN2_HI), x);
        r = n.fma(FloatVector.broadcast(x.species(), -LN2_LO), r);
        FloatVector p = FloatVector.broadcast(x.species(), 1.9875691500e-4f);
        p = p.fma(r, FloatVector.broadcast(x.species(), 1.3981999507e-3f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 8.3334519073e-3f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 4.1665795894e-2f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 1.6666665459e-1f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 5.0000001201e-1f));
        FloatVector er = p.mul(r.mul(r)).add(r).add(1f);
        IntVector bits = ((IntVector) t.reinterpretAsInts()).sub(MAGIC_BITS).add(127).lanewise(VectorOperators.LSHL, 23);
        return er.mul((FloatVector) bits.reinterpretAsFloats());
    }

    /** tanh(x) = 1 − 2/(e^{2x} + 1): saturates cleanly to ±1; absolute error ~1e-7 near 0. */
    public static FloatVector tanh(FloatVector x) {
        FloatVector e = exp(x.mul(2f));
        return FloatVector.broadcast(x.species(), 1f).sub(FloatVector.broadcast(x.species(), 2f).div(e.add(1f)));
    }

    /** Scalar twins with the same operation order, for loop tails. */
    public static float exp(float x) {
        x = Math.min(Math.max(x, EXP_LO), EXP_HI);
        float t = Math.fma(x, LOG2E, MAGIC);
        float n = t - MAGIC;
        float r = Math.fma(n, -LN2_HI, x);
        r = Math.fma(n, -LN2_LO, r);
        float p = 1.9875691500e-4f;
        p = Math.fma(p, r, 1.3981999507e-3f);
        p = Math.fma(p, r, 8.3334519073e-3f);
        p = Math.fma(p, r, 4.1665795894e-2f);
        p = Math.fma(p, r, 1.6666665459e-1f);
        p = Math.fma(p, r, 5.0000001201e-1f);
        float er = p * (r * r) + r + 1f;
        int bits = (Float.floatToRawIntBits(t) - MAGIC_BITS + 127) << 23;
        return er * Float.intBitsToFloat(bits);
    }

    public static float tanh(float x) {
        return 1f - 2f / (exp(2f * x) + 1f);
    }

    static VectorSpecies<Float> species() {
        return S;
    }
}
