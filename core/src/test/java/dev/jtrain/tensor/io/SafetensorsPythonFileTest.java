package dev.jtrain.tensor.io;

import org.junit.jupiter.api.Test;

import java.net.URISyntaxException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Reads bytes written by core/src/test/resources/safetensors/make_python_file.py (struct + json only). */
class SafetensorsPythonFileTest {
    private static Path resource() throws URISyntaxException {
        return Path.of(SafetensorsPythonFileTest.class.getResource("/safetensors/python_written.safetensors").toURI());
    }

    @Test
    void readsEveryDtypeWrittenByPython() throws Exception {
        try (SafetensorsReader r = SafetensorsReader.open(resource())) {
            // names come back in data order, not the header's (alphabetical) order
            assertThat(r.names()).containsExactly("u8", "f64", "f16", "empty", "f32", "i64", "bf16", "scalar", "i32");
            assertThat(r.metadata()).containsEntry("format", "pt").containsEntry("source", "make_python_file.py");

            assertThat(r.info("f32").shape()).containsExactly(2, 3);
            assertThat(r.readFloats("f32")).containsExactly(-0.5f, -0.25f, 0f, 0.25f, 0.5f, 0.75f);
            assertThat(r.readFloats("f16")).containsExactly(1f, -2.5f, 0.125f, 65504f, 0x1p-14f, 0x1p-24f);
            assertThat(r.readFloats("bf16")).containsExactly(1f, -3f, 0.15625f);
            assertThat(r.readFloats("f64")).containsExactly(0.1f, -0.001f, 3.5f, 1e10f);
            assertThat(r.readInts("i32")).containsExactly(0, -7, Integer.MAX_VALUE);
            assertThat(r.readInts("i64")).containsExactly(5, -9);
            assertThat(r.readInts("u8")).containsExactly(0, 1, 200, 255);
            assertThat(r.info("scalar").shape()).isEmpty();
            assertThat(r.readFloats("scalar")).containsExactly(42f);
            assertThat(r.info("empty").byteLength()).isZero();
            assertThat(r.bytes("f16").byteSize()).isEqualTo(12);
        }
    }

    @Test
    void readingTheWrongKindOfTensorSaysWhichReadToUse() throws Exception {
        try (SafetensorsReader r = SafetensorsReader.open(resource())) {
            assertThatThrownBy(() -> r.readFloats("i32")).isInstanceOf(SafetensorsException.class)
                    .hasMessageContaining("tensor=i32").hasMessageContaining("use readInts");
            assertThatThrownBy(() -> r.readInts("f32")).hasMessageContaining("use readFloats");
            assertThatThrownBy(() -> r.info("h.0.attn.bias")).isInstanceOf(SafetensorsException.class)
                    .hasMessageContaining("tensor=h.0.attn.bias").hasMessageContaining("no such tensor");
            assertThatThrownBy(() -> r.readFloats("f32", new float[5], 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("dst.length=5");
        }
    }
}
