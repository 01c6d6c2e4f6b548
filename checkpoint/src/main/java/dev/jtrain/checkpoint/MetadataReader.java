package dev.jtrain.checkpoint;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses {@code metadata.json} with Jackson's streaming parser, field by field, into {@link CheckpointMetadata}; the
 * same rules as the module's mapper ({@link Json}): duplicate keys and trailing tokens refused, unknown fields skipped
 * (newer minor versions may add some), missing ones left null or zero.
 *
 * <p>Why not data binding: a restarted rank reads the metadata first thing, in a cold JVM, and binding records there
 * means building their deserializers by reflection, interpreted: 0.45-0.7 s on one core before the first byte is
 * parsed, against 0.09-0.18 s for this whole parse (bench/MEASUREMENTS.md, "Where a restarted rank's time goes").
 * Recovery time is what a load in a cold JVM is for, so the read path stays on the streaming parser; writing keeps
 * the mapper (it runs in a warm JVM, and the two are checked against each other in tests).
 */
final class MetadataReader {
    private static final JsonFactory FACTORY = JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    private MetadataReader() {}

    /** @throws CheckpointException naming what is malformed */
    static CheckpointMetadata read(byte[] json) {
        try (JsonParser p = FACTORY.createParser(json)) {
            p.nextToken();
            CheckpointMetadata m = metadata(p);
            if (p.nextToken() != null) throw new CheckpointException("trailing content after the metadata object at " + where(p));
            return m;
        } catch (IOException e) {
            throw new CheckpointException("cannot parse CheckpointMetadata JSON: " + e.getMessage(), e);
        }
    }

    private static CheckpointMetadata metadata(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "the metadata");
        String format = null, createdUtc = null;
        int version = 0, worldSize = 0;
        long step = 0;
        Map<String, CheckpointMetadata.Item> items = null;
        Map<String, List<Map<String, String>>> state = null;
        Map<String, CheckpointMetadata.FileEntry> files = null;
        List<LocalPlan> layout = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "format" -> format = text(p);
                case "version" -> version = p.getIntValue();
                case "step" -> step = p.getLongValue();
                case "worldSize" -> worldSize = p.getIntValue();
                case "createdUtc" -> createdUtc = text(p);
                case "items" -> items = objectOf(p, "items", MetadataReader::item);
                case "state" -> state = objectOf(p, "state", q -> listOf(q, "state part", MetadataReader::stringMap));
                case "files" -> files = objectOf(p, "files", MetadataReader::fileEntry);
                case "layout" -> layout = listOf(p, "layout", MetadataReader::localPlan);
                default -> p.skipChildren();
            }
        }
        return new CheckpointMetadata(format, version, step, worldSize, createdUtc, items, state, files, layout);
    }

    private static CheckpointMetadata.Item item(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "an item");
        String dtype = null;
        long[] shape = null;
        List<CheckpointMetadata.Piece> pieces = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "dtype" -> dtype = text(p);
                case "shape" -> shape = longs(p);
                case "pieces" -> pieces = listOf(p, "pieces", MetadataReader::piece);
                default -> p.skipChildren();
            }
        }
        return new CheckpointMetadata.Item(dtype, shape, pieces);
    }

    private static CheckpointMetadata.Piece piece(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "a piece");
        long offset = 0, length = 0, fileOffset = 0, byteLength = 0;
        String file = null, tensor = null, crc = null;
        int writer = 0;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "offset" -> offset = p.getLongValue();
                case "length" -> length = p.getLongValue();
                case "file" -> file = text(p);
                case "tensor" -> tensor = text(p);
                case "fileOffset" -> fileOffset = p.getLongValue();
                case "byteLength" -> byteLength = p.getLongValue();
                case "crc32c" -> crc = text(p);
                case "writer" -> writer = p.getIntValue();
                default -> p.skipChildren();
            }
        }
        return new CheckpointMetadata.Piece(offset, length, file, tensor, fileOffset, byteLength, crc, writer);
    }

    private static CheckpointMetadata.FileEntry fileEntry(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "a file entry");
        int rank = 0;
        long bytes = 0;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "rank" -> rank = p.getIntValue();
                case "bytes" -> bytes = p.getLongValue();
                default -> p.skipChildren();
            }
        }
        return new CheckpointMetadata.FileEntry(rank, bytes);
    }

    private static LocalPlan localPlan(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "a layout entry");
        int rank = 0, worldSize = 0;
        List<PlannedShard> shards = List.of();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "rank" -> rank = p.getIntValue();
                case "worldSize" -> worldSize = p.getIntValue();
                case "shards" -> shards = listOf(p, "shards", MetadataReader::plannedShard);
                default -> p.skipChildren();
            }
        }
        return new LocalPlan(rank, worldSize, shards);
    }

    private static PlannedShard plannedShard(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "a shard");
        String item = null, dtype = null;
        long[] shape = new long[0];
        long offset = 0, length = 0;
        boolean replicated = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            p.nextToken();
            switch (f) {
                case "item" -> item = text(p);
                case "shape" -> shape = longs(p);
                case "dtype" -> dtype = text(p);
                case "offset" -> offset = p.getLongValue();
                case "length" -> length = p.getLongValue();
                case "replicated" -> replicated = p.getBooleanValue();
                default -> p.skipChildren();
            }
        }
        return new PlannedShard(item, shape, dtype, offset, length, replicated);
    }

    private static Map<String, String> stringMap(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT, "a state entry");
        Map<String, String> m = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String k = p.currentName();
            p.nextToken();
            m.put(k, text(p));
        }
        return m;
    }

    private static long[] longs(JsonParser p) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) return null;
        expect(p, JsonToken.START_ARRAY, "a shape");
        long[] out = new long[4];
        int n = 0;
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (n == out.length) out = Arrays.copyOf(out, 2 * n);
            out[n++] = p.getLongValue();
        }
        return Arrays.copyOf(out, n);
    }

    @FunctionalInterface
    private interface Element<T> {
        T read(JsonParser p) throws IOException;
    }

    private static <T> Map<String, T> objectOf(JsonParser p, String what, Element<T> value) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) return null;
        expect(p, JsonToken.START_OBJECT, what);
        Map<String, T> m = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String k = p.currentName();
            p.nextToken();
            m.put(k, value.read(p));
        }
        return m;
    }

    private static <T> List<T> listOf(JsonParser p, String what, Element<T> element) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) return null;
        expect(p, JsonToken.START_ARRAY, what);
        List<T> out = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) out.add(element.read(p));
        return out;
    }

    private static String text(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) return null;
        if (t == null || !t.isScalarValue()) throw new CheckpointException("expected a string but found " + t + " at " + where(p));
        return p.getText();
    }

    private static void expect(JsonParser p, JsonToken token, String what) throws IOException {
        if (p.currentToken() != token)
            throw new CheckpointException("expected " + what + " (" + token + ") but found " + p.currentToken() + " at " + where(p));
    }

    private static String where(JsonParser p) {
        var l = p.currentLocation();
        return "line " + l.getLineNr() + ", column " + l.getColumnNr();
    }
}
