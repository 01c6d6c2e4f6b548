package dev.jtrain.checkpoint;

import dev.jtrain.checkpoint.storage.ShardSink;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where the pieces a load reads land in staging, laid out so that they can be read with direct I/O and no bounce copy.
 *
 * <p>O_DIRECT wants the file offset, the length and the memory address of every read aligned to the block size, but
 * pieces start wherever the previous tensor ended (a 768-float bias moves the next piece 3 KiB). So pieces that follow
 * each other in one file are grouped into a {@link Run}, and a run's staging <em>mirrors</em> the file: it starts at an
 * offset congruent to its file offset modulo {@link #ALIGN}, with each piece at the same distance from the run's start
 * as in the file. The aligned superset of the run — rounded out to blocks at both ends — then maps onto aligned
 * staging, and reading it writes every piece's bytes exactly where the piece belongs. The few bytes of neighbouring
 * data it reads at either end land in a gap kept free between runs, never in another run.
 */
final class ReadLayout {
    /** Block alignment of the direct reads (the largest logical block size in use, as for the writes). */
    static final long ALIGN = ShardSink.DIRECT_ALIGN;

    /**
     * Pieces contiguous in {@code file}, in file order, spanning {@code [fileStart, fileEnd)}; piece {@code p} lands at
     * staging offset {@code stageStart + p.fileOffset() - fileStart}. {@code first} is the read-order index of its first
     * piece.
     */
    record Run(String file, long fileStart, long fileEnd, long stageStart, int first, List<CheckpointMetadata.Piece> pieces) {
        /** The block-aligned file range a direct read of this run covers. */
        long alignedStart() { return fileStart - Math.floorMod(fileStart, ALIGN); }

        long alignedEnd() { return Math.ceilDiv(fileEnd, ALIGN) * ALIGN; }

        /** Staging offset of file offset {@code fileOffset} (also for the spill before and after the run). */
        long stageOf(long fileOffset) { return stageStart + fileOffset - fileStart; }
    }

    private final Map<CheckpointMetadata.Piece, Long> pieceAt;
    private final List<Run> runs;
    private final long size;

    private ReadLayout(Map<CheckpointMetadata.Piece, Long> pieceAt, List<Run> runs, long size) {
        this.pieceAt = pieceAt;
        this.runs = runs;
        this.size = size;
    }

    /**
     * Lays out {@code readOrder} (each piece once, in the order they will be read) from staging offset 0; runs are
     * maximal stretches of that order whose pieces follow each other without a gap in one file.
     */
    static ReadLayout of(List<CheckpointMetadata.Piece> readOrder) {
        Map<CheckpointMetadata.Piece, Long> at = new LinkedHashMap<>();
        List<Run> runs = new ArrayList<>();
        long cursor = 0; // staging in use so far, block-aligned
        if (new HashSet<>(readOrder).size() != readOrder.size())
            throw new IllegalArgumentException("a piece is in the read order twice: " + readOrder);
        for (int i = 0; i < readOrder.size(); ) {
            CheckpointMetadata.Piece head = readOrder.get(i);
            int j = i + 1;
            long end = head.fileOffset() + head.byteLength();
            while (j < readOrder.size() && readOrder.get(j).file().equals(head.file()) && readOrder.get(j).fileOffset() == end) {
                end += readOrder.get(j).byteLength();
                j++;
            }
            long stageStart = cursor + Math.floorMod(head.fileOffset(), ALIGN);
            List<CheckpointMetadata.Piece> pieces = List.copyOf(readOrder.subList(i, j));
            Run run = new Run(head.file(), head.fileOffset(), end, stageStart, i, pieces);
            for (CheckpointMetadata.Piece p : pieces) at.put(p, run.stageOf(p.fileOffset()));
            runs.add(run);
            cursor = run.stageOf(run.alignedEnd()); // past the run's tail spill: the next run's head spill starts here
            i = j;
        }
        return new ReadLayout(Collections.unmodifiableMap(at), List.copyOf(runs), cursor);
    }

    /** Staging offset of every piece read. */
    Map<CheckpointMetadata.Piece, Long> pieceAt() { return pieceAt; }

    /** The runs, in read order. */
    List<Run> runs() { return runs; }

    /** Staging bytes the layout needs (block-aligned, spill included). */
    long size() { return size; }
}
