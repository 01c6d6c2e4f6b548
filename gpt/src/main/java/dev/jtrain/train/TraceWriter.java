package dev.jtrain.train;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.jtrain.parallel.CommTrace;
import dev.jtrain.gpt.BlockTracer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per-rank trace in Chrome Trace Event JSON (opens in Perfetto / chrome://tracing). Tracks: compute (forward and
 * backward per block), optimizer, data, waiting on communication; each collective is an async slice from launch to
 * completion on its own track, so reduce-scatters and all-reduces show up overlapping backward.
 *
 * <p>Threading: collectives complete on the communication thread; every method is synchronized.
 */
public final class TraceWriter implements CommTrace, BlockTracer, AutoCloseable {
    static final int TID_COMPUTE = 1, TID_OPTIM = 2, TID_DATA = 3, TID_WAIT = 4, TID_CHECKPOINT = 5;

    private final ObjectMapper json = new ObjectMapper();
    private final ArrayNode events = json.createArrayNode();
    private final Path file;
    private final int rank;
    private final long originNanos = System.nanoTime();
    private final Map<Integer, Long> backwardStart = new HashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private final Map<String, Long> asyncIds = new HashMap<>();

    public TraceWriter(Path file, int rank) {
        this.file = file;
        this.rank = rank;
        meta("process_name", -1, "rank " + rank);
        meta("thread_name", TID_COMPUTE, "compute");
        meta("thread_name", TID_OPTIM, "optimizer");
        meta("thread_name", TID_DATA, "data");
        meta("thread_name", TID_WAIT, "wait for collectives");
        meta("thread_name", TID_CHECKPOINT, "checkpoint I/O");
    }

    private void meta(String what, int tid, String name) {
        ObjectNode e = events.addObject().put("ph", "M").put("name", what).put("pid", rank);
        if (tid >= 0) e.put("tid", tid);
        e.putObject("args").put("name", name);
    }

    private double us(long nanos) {
        return (nanos - originNanos) / 1e3;
    }

    /** A finished slice on one of the synchronous tracks. */
    public synchronized void span(String name, int tid, long startNanos, long endNanos) {
        events.addObject().put("ph", "X").put("name", name).put("pid", rank).put("tid", tid)
                .put("ts", us(startNanos)).put("dur", Math.max(0, (endNanos - startNanos) / 1e3));
    }

    @Override
    public synchronized void forward(int block, long startNanos, long endNanos) {
        span("forward block " + block, TID_COMPUTE, startNanos, endNanos);
    }

    @Override
    public synchronized void backwardBegin(int block) {
        backwardStart.put(block, System.nanoTime());
    }

    @Override
    public synchronized void backwardEnd(int block) {
        Long s = backwardStart.remove(block);
        if (s != null) span("backward block " + block, TID_COMPUTE, s, System.nanoTime());
    }

    @Override
    public synchronized void begin(String name, long bytes) {
        long id = ids.incrementAndGet();
        asyncIds.put(name, id);
        events.addObject().put("ph", "b").put("cat", "comm").put("name", name).put("id", id).put("pid", rank)
                .put("tid", 10).put("ts", us(System.nanoTime())).putObject("args").put("bytes", bytes);
    }

    @Override
    public synchronized void end(String name) {
        Long id = asyncIds.remove(name);
        if (id == null) return;
        events.addObject().put("ph", "e").put("cat", "comm").put("name", name).put("id", id).put("pid", rank)
                .put("tid", 10).put("ts", us(System.nanoTime()));
    }

    @Override
    public synchronized void close() {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            ObjectNode root = json.createObjectNode();
            root.set("traceEvents", events);
            root.put("displayTimeUnit", "ms");
            json.writeValue(file.toFile(), root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write trace " + file, e);
        }
    }
}
