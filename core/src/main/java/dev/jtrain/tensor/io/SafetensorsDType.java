package dev.jtrain.tensor.io;

import java.util.Optional;

/**
 * Element types a safetensors header may name, with their size in bytes.
 * The names are exactly the strings of the format's {@code "dtype"} field.
 */
public enum SafetensorsDType {
    BOOL(1), U8(1), I8(1), F8_E4M3(1), F8_E5M2(1),
    I16(2), U16(2), F16(2), BF16(2),
    I32(4), U32(4), F32(4),
    I64(8), U64(8), F64(8);

    private final int byteSize;

    SafetensorsDType(int byteSize) {
        this.byteSize = byteSize;
    }

    public int byteSize() {
        return byteSize;
    }

    /** The type whose header string is {@code name}, if the format defines one. */
    public static Optional<SafetensorsDType> fromHeader(String name) {
        for (SafetensorsDType t : values()) if (t.name().equals(name)) return Optional.of(t);
        return Optional.empty();
    }

    /** True for the types {@link SafetensorsReader#readFloats} converts to fp32. */
    public boolean isFloatingPoint() {
        return this == F16 || this == BF16 || this == F32 || this == F64;
    }

    /** True for the integer types {@link SafetensorsReader#readInts} converts to int32. */
    public boolean isInteger() {
        return switch (this) {
            case BOOL, U8, I8, I16, U16, I32, U32, I64, U64 -> true;
            default -> false;
        };
    }
}
