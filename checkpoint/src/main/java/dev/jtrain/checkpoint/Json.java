package dev.jtrain.checkpoint;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

import java.io.IOException;

/** The one JSON mapper of the module: plans on the wire and metadata on disk (records, strict on read). */
final class Json {
    static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES) // newer minor versions may add fields
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private Json() {}

    static byte[] bytes(Object o) {
        try {
            return MAPPER.writeValueAsBytes(o);
        } catch (JacksonException e) {
            throw new IllegalStateException("cannot serialise " + o.getClass().getSimpleName() + ": " + e.getOriginalMessage(), e);
        }
    }

    static <T> T read(byte[] json, Class<T> type) {
        try {
            return MAPPER.readValue(json, type);
        } catch (IOException e) {
            throw new CheckpointException("cannot parse " + type.getSimpleName() + " JSON: " + e.getMessage(), e);
        }
    }
}
