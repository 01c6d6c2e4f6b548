package dev.jtrain.checkpoint;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReadLayoutTest {
    private static final long A = ReadLayout.ALIGN;

    private static CheckpointMetadata.Piece piece(String file, String tensor, long fileOffset, long bytes) {
        return new CheckpointMetadata.Piece(0, bytes / 4, file, tensor, fileOffset, bytes, "00000000", 0);
    }

    @Test
    void piecesThatFollowEachOtherInAFileFormOneRunThatMirrorsTheFile() {
        var a = piece("f0", "a", 1000, 3072);   // starts mid-block
        var b = piece("f0", "b", 4072, 84);
        var c = piece("f0", "c", 4156, 40_000);
        ReadLayout l = ReadLayout.of(List.of(a, b, c));
        assertThat(l.runs()).hasSize(1);
        ReadLayout.Run r = l.runs().getFirst();
        assertThat(r.fileStart()).isEqualTo(1000);
        assertThat(r.fileEnd()).isEqualTo(4156 + 40_000);
        for (var p : List.of(a, b, c)) {
            assertThat(l.pieceAt().get(p) - l.pieceAt().get(a)).as(p.tensor()).isEqualTo(p.fileOffset() - a.fileOffset());
            assertThat(Math.floorMod(l.pieceAt().get(p), A)).as("congruent with the file offset").isEqualTo(Math.floorMod(p.fileOffset(), A));
        }
        // the aligned superset maps onto aligned staging inside the layout
        assertThat(r.stageOf(r.alignedStart()) % A).isZero();
        assertThat(r.stageOf(r.alignedStart())).isGreaterThanOrEqualTo(0);
        assertThat(r.stageOf(r.alignedEnd())).isLessThanOrEqualTo(l.size());
        assertThat(l.size() % A).isZero();
    }

    @Test
    void aGapAnotherFileOrAJumpBackStartsANewRunAndRunsNeverShareABlockOfStaging() {
        var a = piece("f0", "a", 100, 5000);
        var b = piece("f0", "b", 5200, 8);       // 100 bytes after a ends: a gap
        var c = piece("f1", "c", 5208, 12_000);  // another file
        var d = piece("f1", "d", 17_208, 4);     // follows c
        var e = piece("f0", "e", 0, 100);        // back in f0, before a
        ReadLayout l = ReadLayout.of(List.of(a, b, c, d, e));
        assertThat(l.runs()).extracting(ReadLayout.Run::pieces)
                .containsExactly(List.of(a), List.of(b), List.of(c, d), List.of(e));
        assertThat(l.runs()).extracting(ReadLayout.Run::first).containsExactly(0, 1, 2, 4);
        long end = 0;
        for (ReadLayout.Run r : l.runs()) {
            long from = r.stageOf(r.alignedStart()), to = r.stageOf(r.alignedEnd());
            assertThat(from).as("run of %s starts after the previous run's spill", r.pieces()).isGreaterThanOrEqualTo(end);
            assertThat(from % A).isZero();
            end = to;
        }
        assertThat(end).isLessThanOrEqualTo(l.size());
    }

    @Test
    void emptyPiecesAndAnEmptyOrderLayOutToo() {
        assertThat(ReadLayout.of(List.of()).size()).isZero();
        var z = piece("f0", "z", 4096, 0);
        var a = piece("f0", "a", 4096, 8192);
        ReadLayout l = ReadLayout.of(List.of(z, a));
        assertThat(l.runs()).hasSize(1);
        assertThat(l.pieceAt().get(z)).isEqualTo(l.pieceAt().get(a));
    }

    @Test
    void aPieceListedTwiceIsRefused() {
        var a = piece("f0", "a", 0, 16);
        assertThatThrownBy(() -> ReadLayout.of(List.of(a, a))).isInstanceOf(IllegalArgumentException.class);
    }
}
