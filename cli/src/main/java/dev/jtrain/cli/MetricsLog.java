package dev.jtrain.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Appends one JSON object per line (JSONL), flushed per record so a crashed run keeps its metrics. */
final class MetricsLog implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final BufferedWriter out;
    private final Path path;

    MetricsLog(Path path) {
        this.path = path;
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            this.out = Files.newBufferedWriter(path);
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
