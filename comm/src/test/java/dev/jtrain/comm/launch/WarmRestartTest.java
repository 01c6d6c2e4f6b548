package dev.jtrain.comm.launch;

import dev.jtrain.comm.engine.EngineEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The rank's side of the warm-restart protocol, driven through its stdin and stdout as a launcher drives it. */
@Timeout(30)
class WarmRestartTest {
    @Test
    void aStopRequestReachesTheRunningAttemptNotAnAbortAndTheRankParksWithTheAttemptsStatus() throws Exception {
        PipedOutputStream launcher = new PipedOutputStream();
        PipedInputStream in = new PipedInputStream(launcher);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        List<String> seen = new CopyOnWriteArrayList<>();
        CountDownLatch registered = new CountDownLatch(1);
        EngineEnv env = EngineEnv.of(Map.of(), "h");
        CompletableFuture<Integer> rank = CompletableFuture.supplyAsync(() -> WarmRestart.run(env, a -> {
            if (a.warm()) return 0; // the next attempt
            CountDownLatch stop = new CountDownLatch(1);
            a.abort().onAbort(why -> seen.add("abort " + why));
            a.abort().onStopRequest(why -> {
                seen.add("stop " + why);
                stop.countDown();
            });
            registered.countDown();
            try {
                if (!stop.await(20, TimeUnit.SECONDS)) return 1;
            } catch (InterruptedException e) {
                return 2;
            }
            return WarmRestart.STOPPED_FOR_REGROUP;
        }, () -> {}, out, in));
        assertThat(registered.await(10, TimeUnit.SECONDS)).isTrue();
        launcher.write((WarmRestart.STOP + "node 1 asks to rejoin\n").getBytes(StandardCharsets.UTF_8));
        launcher.flush();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!bytes.toString(StandardCharsets.UTF_8).contains(WarmRestart.PARKED) && System.nanoTime() < until) Thread.sleep(10);
        assertThat(bytes.toString(StandardCharsets.UTF_8)).contains(WarmRestart.PARKED + WarmRestart.STOPPED_FOR_REGROUP);
        assertThat(seen).containsExactly("stop node 1 asks to rejoin");
        launcher.write((WarmRestart.RESTART + "RANK=0\n").getBytes(StandardCharsets.UTF_8));
        launcher.flush();
        assertThat(rank.get(10, TimeUnit.SECONDS)).isZero();
    }

    @Test
    void aStopAskedBeforeTheAttemptRegistersIsDeliveredOnRegistration() {
        AbortSignal s = new AbortSignal();
        s.requestStop("early");
        List<String> seen = new CopyOnWriteArrayList<>();
        s.onStopRequest(seen::add);
        s.requestStop("twice");
        assertThat(seen).containsExactly("early");
        assertThat(s.reason()).as("a stop request is not an abort").isNull();
    }
}
