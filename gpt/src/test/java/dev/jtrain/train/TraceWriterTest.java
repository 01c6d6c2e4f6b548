package dev.jtrain.train;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The trace is valid Trace Event Format JSON as Perfetto's and Chrome's importers read it: an object with a
 * {@code traceEvents} array; every event has {@code ph}, {@code pid} and (but metadata) {@code ts} in µs; complete
 * events ("X") have a non-negative {@code dur} and a {@code tid}; async slices ("b"/"e") pair up by
 * (cat, name, id) with begin before end; metadata ("M") names the process and each track used.
 */
class TraceWriterTest {
    @TempDir
    Path dir;

    @Test
    void writesAValidChromeTraceWithNamedTracksAndPairedAsyncSlices() throws Exception {
        Path file = dir.resolve("sub/trace-rank3.json");
        try (TraceWriter w = new TraceWriter(file, 3)) {
            long t0 = System.nanoTime();
            w.forward(0, t0, t0 + 2_000_000);
            w.backwardBegin(0);
            w.begin("all_reduce bucket 0", 4096);
            w.begin("all_reduce bucket 1", 8192);
            w.backwardEnd(0);
            w.end("all_reduce bucket 1");
            w.end("all_reduce bucket 0");
            w.end("never began"); // ignored, not an unpaired end
            w.span("optimizer step 0", TraceWriter.TID_OPTIM, t0 + 3_000_000, t0 + 4_000_000);
        }
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        assertThat(root.isObject()).isTrue();
        JsonNode events = root.get("traceEvents");
        assertThat(events.isArray()).isTrue();

        Set<Integer> namedTracks = new HashSet<>(), usedTracks = new HashSet<>();
        Map<String, Double> openAsync = new HashMap<>();
        int complete = 0, asyncPairs = 0;
        boolean processNamed = false;
        for (JsonNode e : events) {
            String ph = e.get("ph").asText();
            assertThat(e.get("pid").asInt()).as("pid is the rank").isEqualTo(3);
            switch (ph) {
                case "M" -> {
                    if (e.get("name").asText().equals("process_name")) processNamed = e.at("/args/name").asText().equals("rank 3");
                    else namedTracks.add(e.get("tid").asInt());
                }
                case "X" -> {
                    complete++;
                    assertThat(e.get("ts").isNumber()).isTrue();
                    assertThat(e.get("dur").asDouble()).isGreaterThanOrEqualTo(0);
                    usedTracks.add(e.get("tid").asInt());
                }
                case "b" -> {
                    String key = e.get("cat").asText() + "/" + e.get("name").asText() + "/" + e.get("id").asLong();
                    assertThat(openAsync.put(key, e.get("ts").asDouble())).as("begun twice: %s", key).isNull();
                }
                case "e" -> {
                    String key = e.get("cat").asText() + "/" + e.get("name").asText() + "/" + e.get("id").asLong();
                    Double begun = openAsync.remove(key);
                    assertThat(begun).as("end without begin: %s", key).isNotNull();
                    assertThat(e.get("ts").asDouble()).isGreaterThanOrEqualTo(begun);
                    asyncPairs++;
                }
                default -> throw new AssertionError("unexpected phase " + ph + " in " + e);
            }
        }
        assertThat(processNamed).isTrue();
        assertThat(complete).as("forward, backward, optimizer").isEqualTo(3);
        assertThat(asyncPairs).isEqualTo(2);
        assertThat(openAsync).as("async slices left open").isEmpty();
        assertThat(namedTracks).containsAll(usedTracks);
    }
}
