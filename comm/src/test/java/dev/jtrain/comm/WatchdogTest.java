package dev.jtrain.comm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class WatchdogTest {
    /** A failing deadline check is logged with its cause, and the sweep goes on checking the other groups. */
    @Test
    @Timeout(30)
    void aFailingDeadlineCheckIsLoggedAndDoesNotStopTheSweep() throws Exception {
        PrintStream old = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CountDownLatch broken = new CountDownLatch(1), healthy = new CountDownLatch(3);
        Watchdog.Watched failing = new Watchdog.Watched() {
            @Override public void checkDeadline(long nowNanos) {
                broken.countDown();
                throw new IllegalStateException("deadline table corrupted");
            }

            @Override public String toString() { return "group 'broken'"; }
        };
        Watchdog.Watched counting = now -> healthy.countDown();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            Watchdog.watch(failing);
            Watchdog.watch(counting);
            assertThat(broken.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(healthy.await(10, TimeUnit.SECONDS)).as("later sweeps still check the healthy group").isTrue();
        } finally {
            Watchdog.unwatch(failing);
            Watchdog.unwatch(counting);
            System.setErr(old);
        }
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("group 'broken'").contains("deadline table corrupted");
    }
}
