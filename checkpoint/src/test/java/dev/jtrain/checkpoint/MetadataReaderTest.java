package dev.jtrain.checkpoint;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MetadataReaderTest {
    private static CheckpointMetadata sample() {
        var p0 = new CheckpointMetadata.Piece(0, 6, "rank-00000.safetensors", "model/w", 4096, 24, "0e1a8528", 0);
        var p1 = new CheckpointMetadata.Piece(6, 6, "rank-00001.safetensors", "model/w", 4096, 24, "ffffffff", 1);
        var bias = new CheckpointMetadata.Piece(0, 3, "rank-00001.safetensors", "model/b", 4120, 12, "00000001", 1);
        Map<String, CheckpointMetadata.Item> items = new java.util.LinkedHashMap<>();
        items.put("model/w", new CheckpointMetadata.Item("F32", new long[] {3, 4}, List.of(p0, p1)));
        items.put("model/b", new CheckpointMetadata.Item("F32", new long[] {3}, List.of(bias)));
        var layout = List.of(
                new LocalPlan(0, 2, List.of(new PlannedShard("model/w", new long[] {3, 4}, "F32", 0, 6, false),
                        new PlannedShard("model/b", new long[] {3}, "F32", 0, 3, true))),
                new LocalPlan(1, 2, List.of(new PlannedShard("model/w", new long[] {3, 4}, "F32", 6, 6, false),
                        new PlannedShard("model/b", new long[] {3}, "F32", 0, 3, true))));
        return new CheckpointMetadata(CheckpointMetadata.FORMAT, 1, 123, 2, "2026-11-26T21:00:00Z", items,
                Map.of("optimizer", List.of(Map.of("optimizer.step", "123", "rng", "a\"b\\c"), Map.of("optimizer.step", "123"))),
                Map.of("rank-00000.safetensors", new CheckpointMetadata.FileEntry(0, 4120),
                        "rank-00001.safetensors", new CheckpointMetadata.FileEntry(1, 4132)),
                layout);
    }

    @Test
    void readsWhatTheMapperWritesAsTheMapperDoes() {
        byte[] json = Json.bytes(sample());
        CheckpointMetadata streamed = MetadataReader.read(json);
        CheckpointMetadata bound = Json.read(json, CheckpointMetadata.class);
        assertThat(new String(Json.bytes(streamed), StandardCharsets.UTF_8)).isEqualTo(new String(json, StandardCharsets.UTF_8));
        assertThat(new String(Json.bytes(streamed), StandardCharsets.UTF_8)).isEqualTo(new String(Json.bytes(bound), StandardCharsets.UTF_8));
        assertThat(streamed.items().get("model/w").shape()).containsExactly(3, 4);
        assertThat(streamed.items().get("model/w").pieces().get(1).crc32c()).isEqualTo("ffffffff");
        assertThat(streamed.layout().get(1).shards().get(0).offset()).isEqualTo(6);
        assertThat(streamed.layout().get(0).shards().get(1).replicated()).isTrue();
        assertThat(streamed.state().get("optimizer").get(0)).containsEntry("rng", "a\"b\\c");
        assertThat(streamed.totalBytes()).isEqualTo(4120 + 4132);
    }

    @Test
    void skipsFieldsANewerVersionMayAdd() {
        String json = new String(Json.bytes(sample()), StandardCharsets.UTF_8)
                .replace("\"step\" :", "\"future\" : { \"a\" : [1, {\"b\": 2}] }, \"step\" :")
                .replace("\"crc32c\" :", "\"compression\" : null, \"more\" : [ [ ] ], \"crc32c\" :");
        CheckpointMetadata m = MetadataReader.read(json.getBytes(StandardCharsets.UTF_8));
        assertThat(m.step()).isEqualTo(123);
        assertThat(m.items().get("model/b").pieces().get(0).crc32c()).isEqualTo("00000001");
    }

    @Test
    void refusesDuplicateKeysTrailingContentAndWrongShapes() {
        String ok = new String(Json.bytes(sample()), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> MetadataReader.read(ok.replace("\"step\" : 123,", "\"step\" : 123, \"step\" : 124,").getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("step");
        assertThatThrownBy(() -> MetadataReader.read((ok + " {}").getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("trailing");
        assertThatThrownBy(() -> MetadataReader.read(ok.replace("\"file\" : \"rank-00000.safetensors\"", "\"file\" : {\"x\": 1}").getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("expected a string").hasMessageContaining("line");
        assertThatThrownBy(() -> MetadataReader.read(ok.substring(0, ok.length() / 2).getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(CheckpointException.class);
        assertThatThrownBy(() -> MetadataReader.read("[]".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("expected the metadata");
    }
}
