package dev.jtrain.comm;

/**
 * How contributions of the ranks are combined. {@link #AVG} is a {@link #SUM} followed by a division by the group size
 * (integer division, truncating toward zero, for INT32/INT64), applied once to the final result.
 */
public enum ReduceOp {
    SUM, AVG, MAX, MIN, PRODUCT
}
