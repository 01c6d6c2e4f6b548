package dev.jtrain.gpt.data;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConsecutiveWindowsTest {
    private static Tokens positions(int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = i;
        return Tokens.of(t);
    }

    @Test
    void windowBHasInputsFromBTimesTAndTargetsOneAhead() {
        int t = 5;
        ConsecutiveWindows w = new ConsecutiveWindows(positions(3 * t + 1), t);
        assertThat(w.count()).isEqualTo(3);
        Batch b = w.first(3);
        for (int row = 0; row < 3; row++)
            for (int j = 0; j < t; j++) {
                assertThat(b.x()[row * t + j]).isEqualTo(row * t + j);
                assertThat(b.y()[row * t + j]).isEqualTo(row * t + j + 1);
            }
        Batch later = w.windows(1, 2);
        assertThat(later.x()[0]).isEqualTo(t);
        assertThat(later.y()[2 * t - 1]).isEqualTo(3 * t);
    }

    @Test
    void dataTooShortSaysHowManyTokensAreNeeded() {
        ConsecutiveWindows w = new ConsecutiveWindows(positions(3 * 5), 5);   // one token short of 3 windows
        assertThat(w.count()).isEqualTo(2);
        assertThatThrownBy(() -> w.first(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("need 16 tokens, have 15").hasMessageContaining("2 whole windows");
    }
}
