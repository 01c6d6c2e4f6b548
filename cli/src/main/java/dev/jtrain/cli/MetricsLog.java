package dev.jtrain.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Writes one JSON object per line (JSONL), flushed per record so a crashed run keeps its metrics. A restarted attempt
 * of the same run appends, so the file holds the whole history, the failure included.
 */
final class MetricsLog implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final BufferedWriter out;
    private final Path path;

    MetricsLog(Path path) { this(path, false); }

    MetricsLog(Path path, boolean append) {
        this.path = path;
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            this.out = append ? Files.newBufferedWriter(path, StandardOpenOption.CREATE, StandardOpenOption.APPEND) : Files.newBufferedWriter(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open metrics file " + path, e);
        }
    }

    /** Writes {@code record} as JSON with a "type" field first. */
    void write(String type, Object record) {
        try {
            ObjectNode node = JSON.createObjectNode().put("type", type);
            node.setAll((ObjectNode) JSON.valueToTree(record));
            out.write(JSON.writeValueAsString(node));
            out.newLine();
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write metrics to " + path, e);
        }
    }

    /** The last "step" record's step in an existing log, -1 if there is none (a torn last line is skipped). */
    static long lastStep(Path path) {
        if (!Files.isRegularFile(path)) return -1;
        long last = -1;
        try {
            for (String line : Files.readAllLines(path)) {
                try {
                    var n = JSON.readTree(line);
                    if (n != null && "step".equals(n.path("type").asText()) && n.has("step")) last = n.get("step").asLong();
                } catch (IOException torn) {
                    // a line the crash cut short
                }
            }
        } catch (IOException e) {
            return -1;
        }
        return last;
    }

    Path path() {
        return path;
    }

    @Override
    public void close() {
        try {
            out.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close metrics file " + path, e);
        }
    }
}
