package dev.jtrain.tensor.io;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parsed and validated JSON header of a safetensors file: tensors in data order, plus metadata.
 * All rules of {@link SafetensorsLayout} are checked here, once, so readers can trust every offset.
 */
record SafetensorsHeader(LinkedHashMap<String, TensorInfo> tensors, Map<String, String> metadata) {

    /** Strict: duplicate keys and trailing garbage are errors, not "last one wins". */
    static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    /**
     * @param dataBytes size of the data section (file size minus 8 minus header length)
     */
    static SafetensorsHeader parse(Path file, byte[] json, long dataBytes) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JacksonException e) {
            throw new SafetensorsException(file, null, "header is not valid JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new SafetensorsException(file, null, "header cannot be read: " + e, e);
        }
        if (root == null || !root.isObject())
            throw new SafetensorsException(file, null, "header must be a JSON object, found "
                    + (root == null ? "nothing" : root.getNodeType()));

        Map<String, String> metadata = new LinkedHashMap<>();
        List<Map.Entry<String, TensorInfo>> entries = new ArrayList<>();
        for (Map.Entry<String, JsonNode> e : root.properties()) {
            String name = e.getKey();
            JsonNode v = e.getValue();
            if (name.equals(SafetensorsLayout.METADATA_KEY)) {
                if (!v.isObject())
                    throw new SafetensorsException(file, null, "__metadata__ must be an object of strings");
                for (Map.Entry<String, JsonNode> m : v.properties()) {
                    if (!m.getValue().isTextual())
                        throw new SafetensorsException(file, null, "__metadata__ value for key '" + m.getKey()
                                + "' must be a string, found " + m.getValue().getNodeType());
                    metadata.put(m.getKey(), m.getValue().textValue());
                }
                continue;
            }
            entries.add(Map.entry(name, parseTensor(file, name, v)));
        }

        // The data section must be tiled exactly: sorted by begin, each tensor starts where the last ended.
        entries.sort(Comparator.comparingLong((Map.Entry<String, TensorInfo> en) -> en.getValue().begin())
                .thenComparingLong(en -> en.getValue().end()));
        long expected = 0;
        String previous = null;
        LinkedHashMap<String, TensorInfo> tensors = new LinkedHashMap<>();
        for (Map.Entry<String, TensorInfo> en : entries) {
            TensorInfo t = en.getValue();
            if (t.end() > dataBytes)
                throw new SafetensorsException(file, en.getKey(), "data_offsets [" + t.begin() + ", " + t.end()
                        + "] run past the data section (" + dataBytes + " bytes); file is truncated or corrupt");
            if (t.begin() < expected)
                throw new SafetensorsException(file, en.getKey(), "data_offsets [" + t.begin() + ", " + t.end()
                        + "] overlap tensor " + previous + " which ends at " + expected);
            if (t.begin() > expected)
                throw new SafetensorsException(file, en.getKey(), "data_offsets begin " + t.begin()
                        + " leaves a hole after " + (previous == null ? "the start of the data section" : "tensor " + previous)
                        + " which ends at " + expected + "; tensors must be contiguous");
            expected = t.end();
            previous = en.getKey();
            tensors.put(en.getKey(), t);
        }
        if (expected != dataBytes)
            throw new SafetensorsException(file, null, "tensors cover " + expected + " bytes but the data section holds "
                    + dataBytes + "; file has trailing bytes or is corrupt");
        return new SafetensorsHeader(tensors, metadata);
    }

    private static TensorInfo parseTensor(Path file, String name, JsonNode v) {
        if (!v.isObject())
            throw new SafetensorsException(file, name, "entry must be an object with dtype, shape, data_offsets");
        JsonNode dtypeNode = v.get("dtype");
        if (dtypeNode == null || !dtypeNode.isTextual())
            throw new SafetensorsException(file, name, "missing or non-string \"dtype\"");
        SafetensorsDType dtype = SafetensorsDType.fromHeader(dtypeNode.textValue()).orElseThrow(() ->
                new SafetensorsException(file, name, "unknown dtype \"" + dtypeNode.textValue() + "\"; known: "
                        + List.of(SafetensorsDType.values())));
        long[] shape = longArray(file, name, v.get("shape"), "shape", -1);
        long[] offsets = longArray(file, name, v.get("data_offsets"), "data_offsets", 2);
        long begin = offsets[0];
        long end = offsets[1];
        if (end < begin)
            throw new SafetensorsException(file, name, "data_offsets end " + end + " is before begin " + begin);
        long bytes;
        try {
            long numel = 1;
            for (long d : shape) numel = Math.multiplyExact(numel, d);
            bytes = Math.multiplyExact(numel, dtype.byteSize());
        } catch (ArithmeticException e) {
            throw new SafetensorsException(file, name, "shape " + Arrays.toString(shape) + " overflows a long");
        }
        if (bytes != end - begin)
            throw new SafetensorsException(file, name, "shape " + Arrays.toString(shape) + " x " + dtype
                    + " (" + dtype.byteSize() + " bytes) = " + bytes + " bytes, but data_offsets [" + begin + ", " + end
                    + "] span " + (end - begin));
        return new TensorInfo(dtype, shape, begin, end);
    }

    private static long[] longArray(Path file, String name, JsonNode node, String field, int requiredLength) {
        if (node == null || !node.isArray())
            throw new SafetensorsException(file, name, "missing or non-array \"" + field + "\"");
        if (requiredLength >= 0 && node.size() != requiredLength)
            throw new SafetensorsException(file, name, "\"" + field + "\" must have " + requiredLength
                    + " elements, found " + node.size());
        long[] out = new long[node.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode x = node.get(i);
            if (!x.isIntegralNumber() || !x.canConvertToLong() || x.longValue() < 0)
                throw new SafetensorsException(file, name, "\"" + field + "\"[" + i + "] must be a non-negative integer, found " + x);
            out[i] = x.longValue();
        }
        return out;
    }

    /** Serializes a header for the writer, in the given (data) order. */
    static byte[] toJson(Map<String, TensorInfo> tensors, Map<String, String> metadata) {
        ObjectNode root = JSON.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode m = root.putObject(SafetensorsLayout.METADATA_KEY);
            metadata.forEach(m::put);
        }
        tensors.forEach((name, t) -> {
            ObjectNode o = root.putObject(name);
            o.put("dtype", t.dtype().name());
            var shape = o.putArray("shape");
            for (long d : t.shape()) shape.add(d);
            o.putArray("data_offsets").add(t.begin()).add(t.end());
        });
        try {
            return JSON.writeValueAsBytes(root);
        } catch (JacksonException e) {
            throw new IllegalStateException("cannot serialize safetensors header", e);
        }
    }
}
