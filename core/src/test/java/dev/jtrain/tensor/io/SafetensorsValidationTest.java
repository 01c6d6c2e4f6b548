package dev.jtrain.tensor.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** Every rule of the format, broken one at a time; each error must name the file (and tensor when there is one). */
class SafetensorsValidationTest {
    @TempDir
    Path dir;

    /** A file with the given header text (declared length = its byte length) followed by {@code dataBytes} zero bytes. */
    private Path file(String header, int dataBytes) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        return raw(h.length, h, dataBytes);
    }

    private Path raw(long declaredHeaderLength, byte[] header, int dataBytes) throws IOException {
        ByteBuffer bb = ByteBuffer.allocate(8 + header.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        bb.putLong(declaredHeaderLength).put(header);
        Path f = Files.createTempFile(dir, "bad", ".safetensors");
        Files.write(f, bb.array());
        return f;
    }

    private static String t(String name, String dtype, String shape, long begin, long end) {
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + begin + "," + end + "]}";
    }

    private static SafetensorsException failure(Path f) {
        SafetensorsException e = catchThrowableOfType(SafetensorsException.class, () -> SafetensorsReader.open(f).close());
        assertThat(e).as("expected open(%s) to fail", f).isNotNull();
        assertThat(e.getMessage()).contains(f.toString());
        assertThat(e.file()).isEqualTo(f);
        // the header read through positioned reads (how the checkpoint loader reads it) breaks the same rule alike
        SafetensorsException viaReads = catchThrowableOfType(SafetensorsException.class, () -> index(f));
        assertThat(viaReads).as("expected SafetensorsIndex.read(%s) to fail", f).isNotNull();
        assertThat(viaReads.getMessage()).isEqualTo(e.getMessage());
        return e;
    }

    private static SafetensorsIndex index(Path f) throws IOException {
        try (FileChannel ch = FileChannel.open(f)) {
            return SafetensorsIndex.read(f, ch.size(), ch::read);
        }
    }

    @Test
    void validMinimalFileOpens() throws IOException {
        Path f = file("{" + t("a", "F32", "[2]", 0, 8) + "}  ", 8);
        try (SafetensorsReader r = SafetensorsReader.open(f)) {
            assertThat(r.names()).containsExactly("a");
            SafetensorsIndex i = index(f);
            assertThat(i.names()).containsExactly("a");
            assertThat(i.info("a")).isEqualTo(r.info("a"));
            assertThat(i.dataStart()).isEqualTo(r.dataStart());
        }
    }

    @Test
    void fileShorterThanTheHeaderLength() throws IOException {
        Path f = Files.write(dir.resolve("tiny"), new byte[]{1, 2, 3});
        assertThat(failure(f)).hasMessageContaining("shorter than the 8-byte header length");
    }

    @Test
    void headerLengthAboveTheBound() throws IOException {
        assertThat(failure(raw(200_000_000L, new byte[16], 0))).hasMessageContaining("outside [0, 100000000]");
        assertThat(failure(raw(-1L, new byte[16], 0))).hasMessageContaining("outside");
    }

    @Test
    void headerLengthPastEndOfFile() throws IOException {
        assertThat(failure(raw(1000, "{}".getBytes(StandardCharsets.UTF_8), 0))).hasMessageContaining("truncated");
    }

    @Test
    void headerNotJson() throws IOException {
        assertThat(failure(file("{\"a\": ", 0))).hasMessageContaining("not valid JSON");
        assertThat(failure(file("{} trailing", 0))).hasMessageContaining("not valid JSON");
    }

    @Test
    void headerNotAnObject() throws IOException {
        assertThat(failure(file("[1, 2]", 0))).hasMessageContaining("must be a JSON object");
    }

    @Test
    void duplicateTensorName() throws IOException {
        Path f = file("{" + t("a", "F32", "[1]", 0, 4) + "," + t("a", "F32", "[1]", 4, 8) + "}", 8);
        assertThat(failure(f)).hasMessageContaining("not valid JSON").hasMessageContaining("Duplicate field 'a'");
    }

    @Test
    void unknownDtype() throws IOException {
        SafetensorsException e = failure(file("{" + t("w", "F128", "[1]", 0, 16) + "}", 16));
        assertThat(e).hasMessageContaining("tensor=w").hasMessageContaining("unknown dtype \"F128\"");
        assertThat(e.tensor()).isEqualTo("w");
    }

    @Test
    void malformedFields() throws IOException {
        assertThat(failure(file("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4))).hasMessageContaining("missing or non-string \"dtype\"");
        assertThat(failure(file("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4))).hasMessageContaining("non-array \"shape\"");
        assertThat(failure(file("{" + t("w", "F32", "[-1]", 0, 4) + "}", 4))).hasMessageContaining("non-negative integer");
        assertThat(failure(file("{" + t("w", "F32", "[1.5]", 0, 4) + "}", 4))).hasMessageContaining("non-negative integer");
        assertThat(failure(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4))).hasMessageContaining("must have 2 elements");
        assertThat(failure(file("{\"w\":[1]}", 0))).hasMessageContaining("entry must be an object");
        assertThat(failure(file("{" + t("w", "F32", "[0]", 8, 4) + "}", 8))).hasMessageContaining("is before begin");
    }

    @Test
    void shapeTimesDtypeSizeMustEqualByteLength() throws IOException {
        assertThat(failure(file("{" + t("w", "F16", "[3]", 0, 8) + "}", 8)))
                .hasMessageContaining("tensor=w").hasMessageContaining("= 6 bytes").hasMessageContaining("span 8");
        assertThat(failure(file("{" + t("w", "F32", "[4611686018427387904, 4]", 0, 8) + "}", 8))).hasMessageContaining("overflows");
    }

    @Test
    void offsetsPastEndOfFile() throws IOException {
        assertThat(failure(file("{" + t("w", "F32", "[4]", 0, 16) + "}", 8)))
                .hasMessageContaining("tensor=w").hasMessageContaining("run past the data section (8 bytes)");
    }

    @Test
    void overlappingTensors() throws IOException {
        Path f = file("{" + t("a", "F32", "[2]", 0, 8) + "," + t("b", "F32", "[2]", 4, 12) + "}", 12);
        assertThat(failure(f)).hasMessageContaining("tensor=b").hasMessageContaining("overlap tensor a");
    }

    @Test
    void holeBetweenTensors() throws IOException {
        Path f = file("{" + t("a", "F32", "[1]", 0, 4) + "," + t("b", "F32", "[1]", 8, 12) + "}", 12);
        assertThat(failure(f)).hasMessageContaining("tensor=b").hasMessageContaining("leaves a hole after tensor a");
        Path g = file("{" + t("a", "F32", "[1]", 4, 8) + "}", 8);
        assertThat(failure(g)).hasMessageContaining("hole after the start of the data section");
    }

    @Test
    void trailingBytesAfterTheLastTensor() throws IOException {
        assertThat(failure(file("{" + t("a", "F32", "[1]", 0, 4) + "}", 12))).hasMessageContaining("trailing bytes");
    }

    @Test
    void metadataMustBeStrings() throws IOException {
        assertThat(failure(file("{\"__metadata__\":{\"step\":3}}", 0))).hasMessageContaining("'step' must be a string");
        assertThat(failure(file("{\"__metadata__\":[]}", 0))).hasMessageContaining("__metadata__ must be an object");
    }

    @Test
    void int64ValuesOutsideIntRangeAreNotWrapped() throws IOException {
        ByteBuffer data = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1).putLong(1L << 40);
        byte[] h = ("{" + t("ids", "I64", "[2]", 0, 16) + "}").getBytes(StandardCharsets.UTF_8);
        ByteBuffer all = ByteBuffer.allocate(8 + h.length + 16).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).put(h).put(data.array());
        Path f = Files.write(dir.resolve("ids.safetensors"), all.array());
        try (SafetensorsReader r = SafetensorsReader.open(f)) {
            assertThatThrownBy(() -> r.readInts("ids")).isInstanceOf(SafetensorsException.class)
                    .hasMessageContaining("tensor=ids").hasMessageContaining("element 1 = 1099511627776 does not fit in int32");
        }
    }

    @Test
    void missingFileIsReportedAsSafetensorsException() {
        Path f = dir.resolve("nope.safetensors");
        assertThatThrownBy(() -> SafetensorsReader.open(f)).isInstanceOf(SafetensorsException.class)
                .hasMessageContaining("nope.safetensors").hasMessageContaining("cannot read");
    }
}
