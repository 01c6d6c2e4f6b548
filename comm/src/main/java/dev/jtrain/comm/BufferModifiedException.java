package dev.jtrain.comm;

/** A buffer was modified while an operation using it was in flight (detected in {@code JTRAIN_DEBUG=DETAIL} mode). */
public class BufferModifiedException extends CommException {
    public BufferModifiedException(String message) { super(message); }
}
