package dev.jtrain.tensor.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsRoundTripTest {
    @TempDir
    Path dir;

    @Test
    void writtenTensorsReadBackBitForBitInInsertionOrder() {
        long seed = 20261122L;
        System.out.println("seed=" + seed);
        Random rnd = new Random(seed);
        float[] flat = new float[1000];
        for (int i = 0; i < flat.length; i++) flat[i] = (float) rnd.nextGaussian();
        flat[3] = Float.NaN;
        flat[4] = Float.NEGATIVE_INFINITY;
        flat[5] = -0.0f;
        int[] tokens = {0, 1, 50256, -3, Integer.MAX_VALUE};
        Path f = dir.resolve("model.safetensors");
        new SafetensorsWriter()
                .metadata("format", "pt")
                .put("b.weight", new long[]{7, 9}, flat, 100, 63)   // a slice of a flat buffer
                .put("a.bias", new long[]{5}, flat, 0, 5)
                .put("scalar", new long[]{}, flat, 999, 1)
                .put("empty", new long[]{0, 4}, flat, 0, 0)
                .putInts("tokens", new long[]{5}, tokens, 0, 5)
                .write(f);

        try (SafetensorsReader r = SafetensorsReader.open(f)) {
            assertThat(r.names()).containsExactly("b.weight", "a.bias", "scalar", "empty", "tokens");
            assertThat(r.metadata()).containsEntry("format", "pt").hasSize(1);
            TensorInfo b = r.info("b.weight");
            assertThat(b.dtype()).isEqualTo(SafetensorsDType.F32);
            assertThat(b.shape()).containsExactly(7, 9);
            assertThat(b.begin()).isZero();
            assertThat(b.end()).isEqualTo(63 * 4);
            float[] got = new float[70];
            r.readFloats("b.weight", got, 7);
            for (int i = 0; i < 63; i++)
                assertThat(Float.floatToRawIntBits(got[7 + i])).isEqualTo(Float.floatToRawIntBits(flat[100 + i]));
            float[] bias = r.readFloats("a.bias");
            for (int i = 0; i < 5; i++)
                assertThat(Float.floatToRawIntBits(bias[i])).isEqualTo(Float.floatToRawIntBits(flat[i]));
            assertThat(r.readFloats("scalar")).containsExactly(flat[999]);
            assertThat(r.info("scalar").numel()).isEqualTo(1);
            assertThat(r.readFloats("empty")).isEmpty();
            assertThat(r.readInts("tokens")).containsExactly(tokens);
            // a slice of a tensor, as a sharded loader reads it
            float[] part = new float[10];
            r.readFloats("b.weight", 20, part, 0, 10);
            for (int i = 0; i < 10; i++) assertThat(part[i]).isEqualTo(flat[120 + i]);
        }
    }

    @Test
    void tensorsMadeWhileWritingAreMadeOneAtATimeAndReadBack() {
        java.util.List<String> made = new java.util.ArrayList<>();
        Path f = dir.resolve("later.safetensors");
        SafetensorsWriter w = new SafetensorsWriter()
                .putLater("a", new long[]{2, 3}, () -> { made.add("a"); return new float[]{1, 2, 3, 4, 5, 6}; })
                .put("b", new long[]{1}, new float[]{7})
                .putLater("c", new long[]{2}, () -> { made.add("c"); return new float[]{8, 9}; });
        assertThat(made).as("nothing made before the write").isEmpty();
        w.write(f);
        assertThat(made).containsExactly("a", "c");
        try (SafetensorsReader r = SafetensorsReader.open(f)) {
            assertThat(r.names()).containsExactly("a", "b", "c");
            assertThat(r.info("a").shape()).containsExactly(2, 3);
            assertThat(r.readFloats("a")).containsExactly(1, 2, 3, 4, 5, 6);
            assertThat(r.readFloats("b")).containsExactly(7);
            assertThat(r.readFloats("c")).containsExactly(8, 9);
        }
        Path bad = dir.resolve("bad.safetensors");
        assertThatThrownBy(() -> new SafetensorsWriter().putLater("x", new long[]{3}, () -> new float[2]).write(bad))
                .isInstanceOf(SafetensorsException.class).hasMessageContaining("2 values").hasMessageContaining("[3]")
                .hasMessageContaining(bad.getFileName().toString());
        assertThat(bad).doesNotExist();
    }

    @Test
    void headerIsPaddedToEightBytesAndDataIsLittleEndian() throws IOException {
        Path f = dir.resolve("x.safetensors");
        new SafetensorsWriter().put("x", new long[]{2}, new float[]{1.5f, -2f}).write(f);
        ByteBuffer bb = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
        long n = bb.getLong(0);
        assertThat(n % 8).isZero();
        assertThat(bb.capacity()).isEqualTo(8 + n + 8);
        String header = new String(Files.readAllBytes(f), 8, (int) n, java.nio.charset.StandardCharsets.UTF_8);
        assertThat(header).startsWith("{").contains("\"x\"").contains("\"F32\"");
        assertThat(header.strip()).endsWith("}");
        assertThat(bb.getFloat((int) (8 + n))).isEqualTo(1.5f);
        assertThat(bb.getFloat((int) (8 + n + 4))).isEqualTo(-2f);
    }

    @Test
    void writeReplacesAnExistingFileAndLeavesNoTemporaries() throws IOException {
        Path f = dir.resolve("ckpt.safetensors");
        new SafetensorsWriter().put("w", new long[]{1}, new float[]{1f}).write(f);
        new SafetensorsWriter().put("w", new long[]{2}, new float[]{2f, 3f}).write(f);
        try (SafetensorsReader r = SafetensorsReader.open(f)) {
            assertThat(r.readFloats("w")).containsExactly(2f, 3f);
        }
        try (var list = Files.list(dir)) {
            assertThat(list.map(p -> p.getFileName().toString()).toList()).containsExactly("ckpt.safetensors");
        }
        // same permissions as any file the user writes (umask), not a temp file's 0600
        if (f.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Path plain = Files.writeString(dir.resolve("plain.txt"), "x");
            assertThat(Files.getPosixFilePermissions(f)).isEqualTo(Files.getPosixFilePermissions(plain));
        }
    }

    @Test
    void writerRejectsBadEntries() {
        SafetensorsWriter w = new SafetensorsWriter().put("a", new long[]{2}, new float[2]);
        assertThatThrownBy(() -> w.put("a", new long[]{2}, new float[2])).hasMessageContaining("duplicate tensor name: name=a");
        assertThatThrownBy(() -> w.put("b", new long[]{2, 2}, new float[3])).hasMessageContaining("numel=4, len=3");
        assertThatThrownBy(() -> w.put("c", new long[]{4}, new float[5], 2, 4)).hasMessageContaining("slice out of array");
        assertThatThrownBy(() -> w.put("__metadata__", new long[]{1}, new float[1])).hasMessageContaining("invalid tensor name");
    }

    @Test
    void failedWriteNamesTheFile() throws IOException {
        Path blocker = dir.resolve("not-a-dir");
        Files.writeString(blocker, "x");
        Path f = blocker.resolve("m.safetensors");
        assertThatThrownBy(() -> new SafetensorsWriter().put("w", new long[]{1}, new float[1]).write(f))
                .isInstanceOf(SafetensorsException.class)
                .hasMessageContaining("m.safetensors")
                .hasMessageContaining("cannot write");
    }
}
