package dev.jtrain.checkpoint;

import dev.jtrain.tensor.io.SafetensorsException;
import dev.jtrain.tensor.io.SafetensorsReader;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Offline access to a committed checkpoint, for tools ({@code jtrain ckpt verify | consolidate}): verify every piece
 * (safetensors header, placement, CRC32C) and that the pieces of every item tile it; read a whole item as one array.
 * One process, no process group. Threading: stateless; safe from any thread.
 */
public final class CheckpointInspector {
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Outcome of {@link #verify}: empty {@code problems} means the checkpoint is whole. */
    public record Verification(int items, int pieces, long bytes, List<String> problems) {
        public boolean ok() { return problems.isEmpty(); }
    }

    private CheckpointInspector() {}

    public static Verification verify(Path stepDir) {
        CheckpointMetadata m = CheckpointMetadata.read(stepDir);
        List<String> problems = new ArrayList<>();
        int pieces = 0;
        long bytes = 0;
        Map<String, SafetensorsReader> open = new LinkedHashMap<>();
        try {
            for (var e : m.items().entrySet()) {
                String item = e.getKey();
                long cursor = 0;
                List<CheckpointMetadata.Piece> ps = new ArrayList<>(e.getValue().pieces());
                ps.sort(Comparator.comparingLong(CheckpointMetadata.Piece::offset));
                for (CheckpointMetadata.Piece p : ps) {
                    if (p.offset() > cursor) problems.add("item " + item + ": elements [" + cursor + ", " + p.offset() + ") are in no piece");
                    cursor = Math.max(cursor, p.offset() + p.length());
                    pieces++;
                    try {
                        SafetensorsReader r = open.computeIfAbsent(p.file(), f -> SafetensorsReader.open(stepDir.resolve(f)));
                        String bad = check(r, p);
                        if (bad != null) problems.add("file " + r.file() + ", tensor " + p.tensor() + " (item " + item + "): " + bad);
                        else bytes += p.byteLength();
                    } catch (SafetensorsException ex) { // unreadable, truncated or missing file
                        problems.add("file " + stepDir.resolve(p.file()) + ", tensor " + p.tensor() + " (item " + item + "): " + ex.getMessage());
                    }
                }
                if (cursor < e.getValue().numel())
                    problems.add("item " + item + ": elements [" + cursor + ", " + e.getValue().numel() + ") are in no piece");
            }
        } finally {
            open.values().forEach(SafetensorsReader::close);
        }
        return new Verification(m.items().size(), pieces, bytes, problems);
    }

    private static String check(SafetensorsReader r, CheckpointMetadata.Piece p) {
        if (!r.contains(p.tensor())) return "missing from the file";
        var info = r.info(p.tensor());
        if (info.byteLength() != p.byteLength()) return "holds " + info.byteLength() + " bytes, metadata says " + p.byteLength();
        String got = Crc32c.hex(r.bytes(p.tensor()));
        return got.equals(p.crc32c()) ? null : "CRC32C " + got + " does not match the saved " + p.crc32c();
    }

    /** The whole of {@code item} (row-major), assembled from its pieces, each verified by CRC32C. */
    public static float[] readItem(Path stepDir, CheckpointMetadata m, String item) {
        CheckpointMetadata.Item it = m.items().get(item);
        if (it == null) throw new CheckpointException("checkpoint " + stepDir + " has no item " + item);
        float[] out = new float[Math.toIntExact(it.numel())];
        for (CheckpointMetadata.Piece p : it.pieces()) {
            try (SafetensorsReader r = SafetensorsReader.open(stepDir.resolve(p.file()))) {
                String bad = check(r, p);
                if (bad != null) throw new CheckpointException("file " + r.file() + ", tensor " + p.tensor() + " (item " + item + "): " + bad);
                MemorySegment.copy(r.bytes(p.tensor()), F32_LE, 0, out, Math.toIntExact(p.offset()), Math.toIntExact(p.length()));
            }
        }
        return out;
    }
}
