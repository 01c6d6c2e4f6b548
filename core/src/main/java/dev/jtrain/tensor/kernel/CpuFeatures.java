package dev.jtrain.tensor.kernel;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;

/**
 * What this CPU can execute beyond what the Vector API reaches, read once from the kernel's view of it
 * ({@code /proc/cpuinfo}: its flags are what both the CPU and the OS support, AVX-512 register state included).
 * Off Linux or x86-64 nothing is reported, and the kernels that need it take their portable path.
 *
 * @param avx512bf16 {@code vdpbf16ps}, the bf16 pair dot product (Cooper Lake, Sapphire Rapids, Zen 4 and later)
 * @param avx2Fma    256-bit integer vectors and fused multiply-add (Haswell, Zen and later)
 * @param avx512f    512-bit vectors and the 32 zmm registers (Skylake-SP, Zen 4 and later)
 * @param amxBf16    AMX tiles with the bf16 tile product {@code tdpbf16ps} (Sapphire Rapids and later); the OS must
 *                   still grant the process the tile state at run time ({@code Bf16AmxKernel})
 */
public record CpuFeatures(boolean avx512bf16, boolean avx2Fma, boolean avx512f, boolean amxBf16) {
    private static final CpuFeatures NONE = new CpuFeatures(false, false, false, false);

    /** This machine's features. */
    public static final CpuFeatures CURRENT = detect();

    private static CpuFeatures detect() {
        String arch = System.getProperty("os.arch", "");
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")
                || !(arch.equals("amd64") || arch.equals("x86_64"))) return NONE;
        try {
            return parse(Files.readString(Path.of("/proc/cpuinfo")));
        } catch (IOException | RuntimeException e) {
            return NONE;
        }
    }

    /** The features named on the first {@code flags} line of a /proc/cpuinfo text. */
    static CpuFeatures parse(String cpuinfo) {
        for (String line : cpuinfo.split("\n")) {
            if (!line.startsWith("flags")) continue;
            int colon = line.indexOf(':');
            Set<String> flags = Set.of(line.substring(colon + 1).trim().split("\\s+"));
            boolean bf16 = flags.contains("avx512_bf16") && flags.contains("avx512f");
            return new CpuFeatures(bf16, flags.contains("avx2") && flags.contains("fma"), flags.contains("avx512f"),
                    bf16 && flags.contains("amx_tile") && flags.contains("amx_bf16"));
        }
        return NONE;
    }
}
