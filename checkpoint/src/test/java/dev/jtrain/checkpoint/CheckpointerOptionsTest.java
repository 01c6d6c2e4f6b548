package dev.jtrain.checkpoint;

import org.junit.jupiter.api.Test;

import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CheckpointerOptionsTest {
    @Test
    void everythingIsOnByDefaultAndEachPropertyTurnsOneThingOff() {
        assertThat(CheckpointerOptions.from(new Properties())).isEqualTo(CheckpointerOptions.defaults());
        Properties p = new Properties();
        p.setProperty("jtrain.checkpoint.directIo", "false");
        p.setProperty("jtrain.checkpoint.syncFileRange", "FALSE");
        assertThat(CheckpointerOptions.from(p)).isEqualTo(new CheckpointerOptions(false, true, false));
    }

    @Test
    void aValueOtherThanTrueOrFalseIsRefusedNamingTheProperty() {
        Properties p = new Properties();
        p.setProperty("jtrain.checkpoint.hugePages", "no");
        assertThatThrownBy(() -> CheckpointerOptions.from(p)).hasMessageContaining("jtrain.checkpoint.hugePages").hasMessageContaining("no");
    }
}
