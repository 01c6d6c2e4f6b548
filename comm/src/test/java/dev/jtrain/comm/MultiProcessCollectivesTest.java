package dev.jtrain.comm;

import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Ranks as real JVMs started by the Launcher, over shared memory and over TCP: the path of a real job. */
class MultiProcessCollectivesTest {
    @ParameterizedTest(name = "{0} over {1}, {2} ranks")
    @CsvSource({"check, shm, 3", "check, tcp, 3", "peer-dies, shm, 3", "peer-dies, tcp, 3", "peer-hangs, shm, 3", "peer-hangs, tcp, 3"})
    @Timeout(120)
    void collectivesWorkAcrossProcesses(String mode, String transport, int ranks, @TempDir Path dir) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                MultiProcessCheck.class.getName(), mode);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        int status = new Launcher(new LaunchOptions(ranks, 1, 0, "127.0.0.1", 0, 0, null, 2000, cmd), out,
                Map.of("JTRAIN_TRANSPORT", transport, "JTRAIN_HEARTBEAT_TIMEOUT_MS", "4000", "CHECK_DIR", dir.toString())).run();
        String log = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(log);
        assertThat(status).as(log).isZero();
        int survivors = mode.equals("check") ? ranks : ranks - 1; // the rank that dies or stops exits 0 without a word
        assertThat(log.split("OK " + mode, -1).length - 1).as(log).isEqualTo(survivors);
        if (mode.equals("check")) assertThat(log).contains("link=" + transport);
    }

    /** A rank that hangs for good is named, the launcher kills it and restarts the group, and the job completes. */
    @org.junit.jupiter.api.Test
    @Timeout(120)
    void aHungRankIsNamedAndTheLauncherRestartsTheGroup() {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
                MultiProcessCheck.class.getName(), "hang-then-recover");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        int status = new Launcher(new LaunchOptions(3, 1, 0, "127.0.0.1", 0, 1, null, 2000, cmd), out,
                Map.of("JTRAIN_HEARTBEAT_TIMEOUT_MS", "4000")).run();
        String log = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(log);
        assertThat(status).as(log).isZero();
        assertThat(log).contains("aborted: rank 2 on host", "sent no heartbeat", "restarting the group (restart 1 of 1");
        assertThat(log.split("OK hang-then-recover", -1).length - 1).as(log).isEqualTo(3);
    }
}
