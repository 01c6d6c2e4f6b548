package dev.jtrain.tensor.io;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reads a file written by Hugging Face's own safetensors library (0.8.0), made by
 * core/src/test/resources/safetensors/make_official_file.py: its tensor order (by alignment, then name),
 * header padding and every integer type, so our reader follows the reference implementation and not only our
 * reading of the spec.
 */
class SafetensorsOfficialFileTest {
    @Test
    void readsEveryTensorTheReferenceLibraryWrote() throws Exception {
        Path f = Path.of(getClass().getResource("/safetensors/official_written.safetensors").toURI());
        try (SafetensorsReader r = SafetensorsReader.open(f)) {
            assertThat(r.names()).hasSize(11).startsWith("ids", "double");
            assertThat(r.metadata()).containsEntry("format", "np").containsEntry("writer", "safetensors");
            assertThat(r.info("h.0.attn.c_attn.weight").shape()).containsExactly(3, 4);
            float[] w = r.readFloats("h.0.attn.c_attn.weight");
            for (int i = 0; i < 12; i++) assertThat(w[i]).isEqualTo((i - 5.5f) / 4);
            assertThat(r.readFloats("half")).containsExactly(0.5f, -1f, 1024f);
            assertThat(r.readFloats("double")).containsExactly(1e-8f, -2.5f);
            assertThat(r.readFloats("scalar")).containsExactly(3.25f);
            assertThat(r.readInts("ids")).containsExactly(3, 50256, 0, 65535);
            assertThat(r.readInts("i32")).containsExactly(-1, 2, -3);
            assertThat(r.readInts("i16")).containsExactly(-32768, 32767);
            assertThat(r.readInts("u16")).containsExactly(0, 65535);
            assertThat(r.readInts("i8")).containsExactly(-128, 127);
            assertThat(r.readInts("u8")).containsExactly(7);
            assertThat(r.readInts("mask")).containsExactly(1, 0, 1);
            assertThat(r.info("mask").dtype()).isEqualTo(SafetensorsDType.BOOL);
        }
    }
}
