package dev.jtrain.parallel;

/**
 * The element type of gradient traffic. {@link #BF16} rounds each bucket to bfloat16 for the collective and expands
 * the result (the reduction itself decodes, adds in float32 and rounds to nearest even at each step): half the
 * bytes, about 3 significant digits kept. Master weights and optimizer state stay float32.
 */
public enum GradWire {
    FP32, BF16
}
