package dev.jtrain.checkpoint;

import java.util.List;

/**
 * The coordinator's decision for one checkpoint layout: what each rank writes ({@code writes.get(rank)}, in data
 * order) and the layout every rank had ({@code layout}, recorded in the metadata as "world size and layout at save
 * time"). Independent of the step, so it is cached and reused while no rank's {@link LocalPlan} changes.
 */
public record GlobalPlan(int worldSize, List<List<WriteItem>> writes, List<LocalPlan> layout) {
    public GlobalPlan {
        writes = writes.stream().map(List::copyOf).toList();
        layout = List.copyOf(layout);
    }

    /** Bytes of tensor data rank {@code rank} writes (its data section, and its staging buffer). */
    public long bytesWritten(int rank) {
        long b = 0;
        for (WriteItem w : writes.get(rank)) b += w.bytes();
        return b;
    }

    public long[] bytesWrittenPerRank() {
        long[] out = new long[worldSize];
        for (int r = 0; r < worldSize; r++) out[r] = bytesWritten(r);
        return out;
    }

    /** Name of rank {@code rank}'s shard file inside a step directory. */
    public static String fileName(int rank) {
        return String.format("rank-%05d.safetensors", rank);
    }
}
