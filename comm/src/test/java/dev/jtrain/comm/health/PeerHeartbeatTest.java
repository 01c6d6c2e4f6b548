package dev.jtrain.comm.health;

import dev.jtrain.comm.store.InMemoryStore;
import dev.jtrain.comm.store.PrefixStore;
import dev.jtrain.comm.store.Store;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** A silent rank is named by every other rank after the timeout and not before; a rank that leaves is not named. */
@Timeout(60)
class PeerHeartbeatTest {
    private static final HeartbeatOptions OPTIONS = HeartbeatOptions.withTimeout(1_500);

    /**
     * One rank's connection to the shared store. While its gate is shut every call blocks, as every thread of a
     * SIGSTOPped process does.
     */
    private static Store connection(Store shared, AtomicReference<CountDownLatch> gate) {
        Store inner = new PrefixStore("attempt0", shared);
        return (Store) Proxy.newProxyInstance(Store.class.getClassLoader(), new Class<?>[]{Store.class}, (p, m, args) -> {
            if (m.getName().equals("close")) return null;
            CountDownLatch g = gate.get();
            if (g != null) g.await();
            try {
                return m.invoke(inner, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }

    private record Report(int by, RankHungException e, long atNanos) { }

    private static List<PeerHeartbeat> start(Store shared, int world, List<AtomicReference<CountDownLatch>> gates,
                                             LinkedBlockingQueue<Report> reports) {
        List<PeerHeartbeat> beats = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int me = r;
            gates.add(new AtomicReference<>());
            beats.add(PeerHeartbeat.start(connection(shared, gates.get(r)), r, world, OPTIONS, x -> "rank " + x + " on host h" + x,
                    e -> reports.add(new Report(me, e, System.nanoTime()))));
        }
        return beats;
    }

    @Test
    void aSilentRankIsNamedByEveryOtherRankAfterTheTimeoutAndNotBefore() throws Exception {
        InMemoryStore shared = new InMemoryStore(5_000);
        List<AtomicReference<CountDownLatch>> gates = new ArrayList<>();
        LinkedBlockingQueue<Report> reports = new LinkedBlockingQueue<>();
        List<PeerHeartbeat> beats = start(shared, 3, gates, reports);
        CountDownLatch stopped = new CountDownLatch(1);
        try {
            // every rank beating for twice the timeout: nobody is named
            assertThat(reports.poll(2 * OPTIONS.timeoutMs(), TimeUnit.MILLISECONDS)).isNull();

            gates.get(2).set(stopped); // rank 2 stops
            long t = System.nanoTime();
            List<Report> got = List.of(reports.poll(20, TimeUnit.SECONDS), reports.poll(20, TimeUnit.SECONDS));
            for (Report r : got) {
                assertThat(r.e().rank()).isEqualTo(2);
                // the first finding, published: every rank reports the same one
                assertThat(r.e().getMessage()).isEqualTo(got.get(0).e().getMessage()).contains("rank 2 on host h2 sent no"
                        + " heartbeat for", "stopped, frozen or hung", "JTRAIN_HEARTBEAT_TIMEOUT_MS=1500", "seen by rank ");
                long afterMs = TimeUnit.NANOSECONDS.toMillis(r.atNanos() - t);
                assertThat(afterMs).as("named only once the timeout has passed")
                        .isGreaterThanOrEqualTo(OPTIONS.timeoutMs() - 2 * OPTIONS.intervalMs());
            }
            assertThat(got).extracting(Report::by).containsExactlyInAnyOrder(0, 1);
        } finally {
            stopped.countDown(); // rank 2 continues, and can close
            beats.forEach(PeerHeartbeat::close);
        }
    }

    @Test
    void aRankThatClosesItsGroupIsNotCalledHung() throws Exception {
        InMemoryStore shared = new InMemoryStore(5_000);
        List<AtomicReference<CountDownLatch>> gates = new ArrayList<>();
        LinkedBlockingQueue<Report> reports = new LinkedBlockingQueue<>();
        List<PeerHeartbeat> beats = start(shared, 3, gates, reports);
        try {
            beats.get(1).close(); // rank 1 finished its work and left
            assertThat(reports.poll(3 * OPTIONS.timeoutMs(), TimeUnit.MILLISECONDS)).isNull();
        } finally {
            beats.forEach(PeerHeartbeat::close);
        }
    }

    /**
     * A rank on a host cut off from the store's closes its group before its error is printed: closing must not wait
     * out the store's timeout (here: forever) for the best-effort "departed" mark.
     */
    @Test
    void closingWhenTheStoreNoLongerAnswersTakesAtMostTwoBeatIntervals() throws Exception {
        InMemoryStore shared = new InMemoryStore(5_000);
        List<AtomicReference<CountDownLatch>> gates = new ArrayList<>();
        List<PeerHeartbeat> beats = start(shared, 2, gates, new LinkedBlockingQueue<>());
        CountDownLatch cut = new CountDownLatch(1);
        try {
            Thread.sleep(3 * OPTIONS.intervalMs());
            gates.get(0).set(cut); // every call of rank 0's connection now blocks
            long t0 = System.nanoTime();
            beats.get(0).close();
            double seconds = (System.nanoTime() - t0) / 1e9;
            long boundMs = Math.max(1_000, 2 * OPTIONS.intervalMs());
            assertThat(seconds).as("the heartbeat thread and the departed mark waited for at most %d ms between them", boundMs)
                    .isLessThan(boundMs / 1e3 + 1);
        } finally {
            cut.countDown();
            beats.forEach(PeerHeartbeat::close);
        }
    }

    @Test
    void aStoreThatStopsAnsweringIsReportedAsSuch() throws Exception {
        InMemoryStore shared = new InMemoryStore(5_000);
        AtomicReference<Boolean> down = new AtomicReference<>(false);
        CountDownLatch answered = new CountDownLatch(3); // whole beats the store answered (each ends with a compareSet)
        Store inner = new PrefixStore("attempt0", shared);
        Store flaky = (Store) Proxy.newProxyInstance(Store.class.getClassLoader(), new Class<?>[]{Store.class}, (p, m, args) -> {
            if (m.getName().equals("close")) return null;
            if (down.get()) throw new dev.jtrain.comm.CommTimeoutException("store at h0:29500: no reply to add within 1500 ms");
            Object r = m.invoke(inner, args);
            if (m.getName().equals("compareSet")) answered.countDown();
            return r;
        });
        LinkedBlockingQueue<RankHungException> reports = new LinkedBlockingQueue<>();
        try (PeerHeartbeat b = PeerHeartbeat.start(flaky, 0, 2, OPTIONS, x -> "rank " + x, reports::add);
             PeerHeartbeat other = PeerHeartbeat.start(new PrefixStore("attempt0", shared), 1, 2, OPTIONS, x -> "rank " + x, e -> { })) {
            assertThat(answered.await(20, TimeUnit.SECONDS)).as("the store answered rank 0's first beats").isTrue();
            down.set(true);
            RankHungException e = reports.poll(20, TimeUnit.SECONDS);
            assertThat(e).isNotNull();
            assertThat(e.rank()).isEqualTo(-1);
            assertThat(e.getMessage()).contains("the job's store did not answer rank 0's heartbeats", "no reply to add");
        }
    }

    @Test
    void optionsComeFromTheEnvironmentAndAreChecked() {
        assertThat(HeartbeatOptions.fromEnv(java.util.Map.of())).isEqualTo(HeartbeatOptions.defaults());
        assertThat(HeartbeatOptions.fromEnv(java.util.Map.of("JTRAIN_HEARTBEAT_TIMEOUT_MS", "0")).enabled()).isFalse();
        HeartbeatOptions o = HeartbeatOptions.fromEnv(java.util.Map.of("JTRAIN_HEARTBEAT_TIMEOUT_MS", "20000"));
        assertThat(o.timeoutMs()).isEqualTo(20_000);
        assertThat(o.intervalMs()).isEqualTo(2_000);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> HeartbeatOptions.fromEnv(java.util.Map.of("JTRAIN_HEARTBEAT_TIMEOUT_MS", "soon")))
                .hasMessageContaining("JTRAIN_HEARTBEAT_TIMEOUT_MS=soon");
    }
}
