package dev.jtrain.tensor.kernel;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KernelOptionsTest {
    private static Properties props(String... kv) {
        Properties p = new Properties();
        for (int i = 0; i < kv.length; i += 2) p.setProperty(kv[i], kv[i + 1]);
        return p;
    }

    @Test
    void defaultsWhenNothingIsSet() {
        assertThat(KernelOptions.from(props(), Map.of())).isEqualTo(new KernelOptions(0, 0, 0, 16, 80L * 80 * 80, KernelOptions.Bf16Mode.AUTO, KernelOptions.SgemmMode.AUTO));
    }

    @Test
    void threadsComeFromTheEnvironmentAndThePropertyWins() {
        assertThat(KernelOptions.from(props(), Map.of("JTRAIN_THREADS", "3")).threads()).isEqualTo(3);
        assertThat(KernelOptions.from(props("jtrain.threads", "1"), Map.of("JTRAIN_THREADS", "3")).threads()).isEqualTo(1);
    }

    @Test
    void sgemmChoicesAreReadAndValidated() {
        KernelOptions o = KernelOptions.from(props("jtrain.sgemm.vectorBits", "256", "jtrain.sgemm.mr", "6"), Map.of());
        assertThat(o.vectorBits()).isEqualTo(256);
        assertThat(o.sgemmMr()).isEqualTo(6);
        assertThatThrownBy(() -> KernelOptions.from(props("jtrain.sgemm.vectorBits", "128"), Map.of())).hasMessageContaining("256 or 512");
        assertThatThrownBy(() -> KernelOptions.from(props("jtrain.sgemm.mr", "8"), Map.of())).hasMessageContaining("6 or 12");
        assertThat(KernelOptions.from(props("jtrain.sgemm.kernel", "vector"), Map.of()).sgemmKernel()).isEqualTo(KernelOptions.SgemmMode.VECTOR);
        assertThat(KernelOptions.from(props("jtrain.bf16.kernel", " FP32 "), Map.of()).bf16Kernel()).isEqualTo(KernelOptions.Bf16Mode.FP32);
        assertThatThrownBy(() -> KernelOptions.from(props("jtrain.sgemm.kernel", "asm"), Map.of()))
                .hasMessageContaining("jtrain.sgemm.kernel must be one of auto, native, vector: asm");
        assertThatThrownBy(() -> KernelOptions.from(props("jtrain.sgemm.kernel", "native", "jtrain.sgemm.mr", "12"), Map.of()))
                .hasMessageContaining("jtrain.sgemm.mr=12");
    }

    @Test
    void badValuesAreRefusedNamingTheSetting() {
        assertThatThrownBy(() -> KernelOptions.from(props(), Map.of("JTRAIN_THREADS", "two"))).hasMessageContaining("JTRAIN_THREADS")
                .hasMessageContaining("two");
        assertThatThrownBy(() -> KernelOptions.from(props("jtrain.threads", "0"), Map.of())).hasMessageContaining(">= 1");
    }
}
