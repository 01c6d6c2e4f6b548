package dev.jtrain.parallel;

/** Receives the launch and completion of each collective, for the Perfetto trace. Implementations must be thread-safe. */
public interface CommTrace {
    CommTrace NONE = new CommTrace() {
        @Override public void begin(String name, long bytes) {}

        @Override public void end(String name) {}
    };

    void begin(String name, long bytes);

    void end(String name);
}
