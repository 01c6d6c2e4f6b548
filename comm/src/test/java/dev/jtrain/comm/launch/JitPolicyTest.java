package dev.jtrain.comm.launch;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class JitPolicyTest {
    @Test
    void ranksSharingANodeCompileInTheForeground() {
        assertThat(JitPolicy.childJavaOptions(2, null)).isEqualTo("-XX:-BackgroundCompilation");
        assertThat(JitPolicy.childJavaOptions(4, "-Xss2m")).isEqualTo("-Xss2m -XX:-BackgroundCompilation");
    }

    @Test
    void aRankAloneAndAUsersOwnChoiceAreLeftAsTheyAre() {
        assertThat(JitPolicy.childJavaOptions(1, null)).isNull();
        assertThat(JitPolicy.childJavaOptions(1, "-Xss2m")).isEqualTo("-Xss2m");
        assertThat(JitPolicy.childJavaOptions(2, "-XX:+BackgroundCompilation")).isEqualTo("-XX:+BackgroundCompilation");
    }
}
