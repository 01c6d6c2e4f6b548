package dev.jtrain.tensor.kernel;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

/**
 * The kernel settings of this JVM, read and validated once, here, at class initialisation: the kernels' static
 * choices (vector width, tile rows) can not change after their classes load anyway.
 *
 * @param threads     kernel threads including the caller: {@code JTRAIN_THREADS} or {@code -Djtrain.threads}
 *                    (the property wins); 0 = every available processor
 * @param vectorBits  SGEMM vector width, 256 or 512 ({@code -Djtrain.sgemm.vectorBits}); 0 = 512 where the CPU's
 *                    preferred species is that wide, else 256
 * @param sgemmMr     SGEMM micro-tile rows, 6 or 12 ({@code -Djtrain.sgemm.mr}); 0 = 12 with 32 vector registers
 *                    (AVX-512), else 6
 * @param smallM      products with at most this many rows skip packing ({@code -Djtrain.sgemm.smallM})
 * @param smallVolume products with m·n·k at most this skip packing ({@code -Djtrain.sgemm.smallVolume})
 * @param bf16Kernel  how bf16 matmuls run ({@code -Djtrain.bf16.kernel}): {@code auto} = the CPU's bf16
 *                    instructions where it has them (AMX tiles first, then AVX512_BF16), else fp32 compute on
 *                    bf16-rounded operands; {@code native} = those instructions or fail at start; {@code amx},
 *                    {@code avx512} = that kernel or fail at start; {@code fp32} = always the fp32 fallback
 * @param sgemmKernel how the 256-bit fp32 micro-kernel runs ({@code -Djtrain.sgemm.kernel}): {@code auto} = the
 *                    AVX2 + FMA machine-code kernel where the 256-bit tile is chosen and the CPU has them, else the
 *                    Vector API; {@code native} = the machine-code kernel (which implies the 256-bit, 6-row tile) or
 *                    fail at start; {@code vector} = always the Vector API
 */
public record KernelOptions(int threads, int vectorBits, int sgemmMr, int smallM, long smallVolume, Bf16Mode bf16Kernel,
                            SgemmMode sgemmKernel) {
    public static final String THREADS_ENV = "JTRAIN_THREADS";

    /** How bf16 matmuls run ({@code -Djtrain.bf16.kernel}). */
    public enum Bf16Mode { AUTO, NATIVE, AMX, AVX512, FP32 }

    /** How the 256-bit fp32 micro-kernel runs ({@code -Djtrain.sgemm.kernel}). */
    public enum SgemmMode { AUTO, NATIVE, VECTOR }

    /** This JVM's settings. */
    public static final KernelOptions CURRENT = from(System.getProperties(), System.getenv());

    public KernelOptions {
        if (threads < 0) throw new IllegalArgumentException("kernel threads must be >= 1 (or 0 for all cores): " + threads);
        if (vectorBits != 0 && vectorBits != 256 && vectorBits != 512) {
            throw new IllegalArgumentException("jtrain.sgemm.vectorBits must be 256 or 512: " + vectorBits);
        }
        if (sgemmMr != 0 && sgemmMr != 6 && sgemmMr != 12) throw new IllegalArgumentException("jtrain.sgemm.mr must be 6 or 12: " + sgemmMr);
        if (smallM < 0 || smallVolume < 0) throw new IllegalArgumentException("small-product thresholds must be >= 0");
        if (bf16Kernel == null || sgemmKernel == null) throw new IllegalArgumentException("kernel modes must be set");
        if (sgemmKernel == SgemmMode.NATIVE && (vectorBits == 512 || sgemmMr == 12)) {
            throw new IllegalArgumentException("jtrain.sgemm.kernel=native runs the 256-bit 6-row tile, but "
                    + (vectorBits == 512 ? "jtrain.sgemm.vectorBits=512" : "jtrain.sgemm.mr=12") + " asks for another; drop one of the two");
        }
    }

    static KernelOptions from(Properties props, Map<String, String> env) {
        String threads = props.getProperty("jtrain.threads", env.get(THREADS_ENV));
        return new KernelOptions(
                positive(threads, "jtrain.threads / " + THREADS_ENV, 0),
                (int) number(props.getProperty("jtrain.sgemm.vectorBits"), "jtrain.sgemm.vectorBits", 0),
                (int) number(props.getProperty("jtrain.sgemm.mr"), "jtrain.sgemm.mr", 0),
                (int) number(props.getProperty("jtrain.sgemm.smallM"), "jtrain.sgemm.smallM", 16),
                number(props.getProperty("jtrain.sgemm.smallVolume"), "jtrain.sgemm.smallVolume", 80L * 80 * 80),
                mode(Bf16Mode.class, props.getProperty("jtrain.bf16.kernel"), "jtrain.bf16.kernel"),
                mode(SgemmMode.class, props.getProperty("jtrain.sgemm.kernel"), "jtrain.sgemm.kernel"));
    }

    /** {@code v} as one of {@code type}'s constants, case-insensitively; AUTO when unset. */
    private static <E extends Enum<E>> E mode(Class<E> type, String v, String name) {
        if (v == null || v.isBlank()) return Enum.valueOf(type, "AUTO");
        try {
            return Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            String names = Arrays.stream(type.getEnumConstants()).map(c -> c.name().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", "));
            throw new IllegalArgumentException(name + " must be one of " + names + ": " + v.trim(), e);
        }
    }

    private static int positive(String v, String name, int dflt) {
        int n = (int) number(v, name, dflt);
        if (v != null && !v.isBlank() && n < 1) throw new IllegalArgumentException(name + " must be >= 1: " + v);
        return n;
    }

    private static long number(String v, String name, long dflt) {
        if (v == null || v.isBlank()) return dflt;
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be an integer: " + v, e);
        }
    }
}
