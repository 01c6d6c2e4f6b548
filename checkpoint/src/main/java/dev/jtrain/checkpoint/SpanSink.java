package dev.jtrain.checkpoint;

/**
 * Where checkpoint I/O phases are reported for a timeline (the trainer forwards them to its Perfetto trace).
 * Called from the caller's thread and from the background writer; implementations must be thread-safe.
 */
@FunctionalInterface
public interface SpanSink {
    SpanSink NONE = (name, startNanos, endNanos) -> {};

    void span(String name, long startNanos, long endNanos);
}
