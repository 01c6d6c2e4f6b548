package dev.jtrain.comm.transport;

import dev.jtrain.comm.launch.JvmRanks;
import dev.jtrain.comm.launch.LaunchOptions;
import dev.jtrain.comm.launch.Launcher;
import dev.jtrain.comm.launch.RendezvousEnv;
import dev.jtrain.comm.store.StoreFrameDescriptor;
import dev.jtrain.comm.store.TcpStoreServer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Transports between real JVMs: data across processes, and a rank killed with SIGKILL in the middle of a transfer. */
@Timeout(120)
class MultiProcessTransportTest {

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void ringOfThreeJvmsExchangesAnOddSizedMessage(String kind) throws Exception {
        var bytes = new ByteArrayOutputStream();
        int status;
        try (var ps = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            var o = new LaunchOptions(3, 1, 0, "127.0.0.1", 0, 0, null, 2_000, JvmRanks.workerCommand("ring", kind, "5000011"));
            status = new Launcher(o, ps, Map.of(RendezvousEnv.TIMEOUT_MS, "30000")).run();
        }
        String out = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(out);
        assertThat(status).isZero();
        for (int r = 0; r < 3; r++) assertThat(out).contains("[rank " + r + "] ring ok " + kind);
        assertThat(ringFiles()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void killingARankMidTransferFailsTheSurvivorsPromptlyNamingIt(String kind) throws Exception {
        String token = "kill-test-" + System.nanoTime();
        int size = 3;
        try (TcpStoreServer server = new TcpStoreServer("127.0.0.1", 0, token, StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 5_000)) {
            List<Process> ps = new ArrayList<>();
            List<List<String>> lines = new ArrayList<>();
            List<Thread> pumps = new ArrayList<>();
            for (int r = 0; r < size; r++) {
                ProcessBuilder pb = new ProcessBuilder(JvmRanks.workerCommand("victim", kind)).redirectErrorStream(true);
                Map<String, String> env = pb.environment();
                env.put(RendezvousEnv.RANK, Integer.toString(r));
                env.put(RendezvousEnv.WORLD_SIZE, Integer.toString(size));
                env.put(RendezvousEnv.MASTER_ADDR, "127.0.0.1");
                env.put(RendezvousEnv.MASTER_PORT, Integer.toString(server.port()));
                env.put(RendezvousEnv.JOB_TOKEN, token);
                env.put(RendezvousEnv.STORE_IN_LAUNCHER, "1");
                env.put(RendezvousEnv.TIMEOUT_MS, "20000");
                Process p = pb.start();
                List<String> out = new CopyOnWriteArrayList<>();
                pumps.add(Thread.ofPlatform().daemon().start(() -> {
                    try (var rd = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String l; (l = rd.readLine()) != null; ) out.add(l);
                    } catch (Exception ignored) {
                        // process gone
                    }
                }));
                ps.add(p);
                lines.add(out);
            }
            try {
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!lines.get(2).contains("streaming") && System.nanoTime() < until) {
                    assertThat(ps.get(2).isAlive()).as("rank 2 output: " + lines.get(2)).isTrue();
                    Thread.sleep(10);
                }
                assertThat(lines.get(2)).contains("streaming");
                long t0 = System.nanoTime();
                ps.get(2).destroyForcibly(); // SIGKILL: no shutdown hooks, no close()
                for (int r = 0; r < 2; r++) {
                    assertThat(ps.get(r).waitFor(15, TimeUnit.SECONDS)).as("rank " + r + " ended; output " + lines.get(r)).isTrue();
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                System.out.printf("%s: survivors failed %.2f s after the kill%n", kind, seconds);
                for (int r = 0; r < 2; r++) {
                    pumps.get(r).join(10_000); // the pump has read the last line once it sees end of stream
                    assertThat(ps.get(r).exitValue()).as("rank " + r + " output " + lines.get(r)).isEqualTo(42);
                    String failure = lines.get(r).stream().filter(l -> l.startsWith("CommException")).findFirst().orElseThrow();
                    // Rank 0 receives from the dead rank 2 and must name it; rank 1 may first see rank 0 give up.
                    if (r == 0) assertThat(failure).containsAnyOf("peer=2", "peer rank 2");
                    else assertThat(failure).containsAnyOf("peer=2", "peer rank 2", "peer rank 0");
                }
                assertThat(seconds).isLessThan(10.0);
            } finally {
                ps.forEach(Process::destroyForcibly);
            }
        }
        assertThat(ringFiles()).isEmpty();
    }

    /** Ring files of WorkerMain's group ("w", generation-suffixed by Transports). */
    private static List<Path> ringFiles() throws Exception {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.filter(p -> p.getFileName().toString().startsWith("jtrain-w.")).toList();
        }
    }
}
