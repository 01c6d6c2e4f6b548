package dev.jtrain.cli;

import dev.jtrain.checkpoint.storage.memory.PeerMemoryStorage.Placement;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.data.Batch;
import dev.jtrain.train.TrainConfig;
import dev.jtrain.train.Trainer;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** --mem-ckpt-every is refused up front, with the figures, when a node's launcher could not hold its share. */
class MemoryCheckpointFitTest {
    private static Trainer trainer() {
        GptConfig m = new GptConfig(2, 2, 16, 8, 40, 0f, true);
        Batch b = new Batch(new int[32], new int[32], 4, 8);
        return new Trainer(new TrainConfig(m, 4, 1, 1, 0, 1e-3f, 1e-4f, 0, 0f, 1f, 0, 1, 1, false, 1e9, 0), new Gpt(m, 1),
                s -> b, s -> b);
    }

    @Test
    void aHolderTooSmallForItsShareIsNamedWithWhatItNeeds() {
        Trainer t = trainer();
        long state = 12L * t.parameters().data().length;
        // 2 nodes: each holds all of the state (its own half and its buddy's), 3 times (2 kept, 1 being saved)
        assertThatCode(() -> TrainCommand.checkHoldersFit(t, 2, Placement.BUDDY, Long.toString(3 * state))).doesNotThrowAnyException();
        assertThatThrownBy(() -> TrainCommand.checkHoldersFit(t, 2, Placement.BUDDY, Long.toString(3 * state - 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("each node's launcher would hold up to").hasMessageContaining("2/2 of it")
                .hasMessageContaining("2/5 of its host's memory");
        // 4 nodes: half of it each
        assertThatCode(() -> TrainCommand.checkHoldersFit(t, 4, Placement.BUDDY, Long.toString(3 * state / 2))).doesNotThrowAnyException();
        assertThatThrownBy(() -> TrainCommand.checkHoldersFit(t, 4, Placement.BUDDY, Long.toString(3 * state / 2 - 1)))
                .hasMessageContaining("2/4 of it");
        // each node keeps a whole copy (DDP: OWN_NODE), however many nodes
        assertThatCode(() -> TrainCommand.checkHoldersFit(t, 4, Placement.OWN_NODE, Long.toString(3 * state))).doesNotThrowAnyException();
        assertThatThrownBy(() -> TrainCommand.checkHoldersFit(t, 4, Placement.OWN_NODE, Long.toString(3 * state - 1)))
                .hasMessageContaining("every node keeps a whole copy");
        assertThatCode(() -> TrainCommand.checkHoldersFit(t, 2, Placement.BUDDY, null)).as("no budget given: nothing to check").doesNotThrowAnyException();
    }
}
