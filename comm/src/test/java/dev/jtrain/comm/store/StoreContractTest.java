package dev.jtrain.comm.store;

import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.ThreadStates;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The same contract checked against the in-memory store and a TCP client/server pair. */
@Timeout(30)
class StoreContractTest {
    private static final String TOKEN = "test-token-123";

    /** Returns a fresh store plus the extra clients sharing it. */
    private static List<Store> stores(String kind, int clients) {
        List<Store> out = new ArrayList<>();
        if (kind.equals("memory")) {
            InMemoryStore s = new InMemoryStore(5_000);
            for (int i = 0; i < clients; i++) out.add(s);
        } else {
            TcpStore host = TcpStore.create(TcpStoreOptions.server("127.0.0.1", 0, TOKEN, 5_000));
            out.add(host);
            for (int i = 1; i < clients; i++) out.add(TcpStore.create(TcpStoreOptions.client("127.0.0.1", host.port(), TOKEN, 5_000)));
        }
        return out;
    }

    private static void closeAll(List<Store> stores) {
        for (int i = stores.size() - 1; i >= 0; i--) stores.get(i).close();
    }

    private static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "tcp"})
    void setGetDeleteAndCountKeys(String kind) {
        List<Store> st = stores(kind, 1);
        try {
            Store s = st.get(0);
            s.set("a", b("1"));
            s.set("b", new byte[0]);
            assertThat(s.get("a")).isEqualTo(b("1"));
            assertThat(s.get("b")).isEmpty();
            assertThat(s.numKeys()).isEqualTo(2);
            assertThat(s.delete("a")).isTrue();
            assertThat(s.delete("a")).isFalse();
            assertThat(s.numKeys()).isEqualTo(1);
            assertThat(s.localAddress()).isEqualTo(kind.equals("tcp") ? "127.0.0.1" : null);
            assertThat(new PrefixStore("p", s).localAddress()).isEqualTo(s.localAddress());
        } finally {
            closeAll(st);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "tcp"})
    void concurrentAddsFromManyClientsAreAtomic(String kind) throws Exception {
        int clients = 4, perClient = 200;
        List<Store> st = stores(kind, clients);
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (Store s : st) fs.add(pool.submit(() -> { for (int i = 0; i < perClient; i++) s.add("n", 1); }));
            for (Future<?> f : fs) f.get();
            assertThat(st.get(0).add("n", 0)).isEqualTo((long) clients * perClient);
            assertThat(new String(st.get(0).get("n"), StandardCharsets.US_ASCII)).isEqualTo(Integer.toString(clients * perClient));
        } finally {
            pool.shutdownNow();
            closeAll(st);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "tcp"})
    void compareSetSwapsOnlyOnMatch(String kind) {
        List<Store> st = stores(kind, 1);
        try {
            Store s = st.get(0);
            assertThat(s.compareSet("k", b("x"), b("y"))).isEqualTo(b("x")); // absent, non-empty expected: no swap
            assertThat(s.numKeys()).isZero();
            assertThat(s.compareSet("k", new byte[0], b("v1"))).isEqualTo(b("v1"));
            assertThat(s.compareSet("k", b("nope"), b("v2"))).isEqualTo(b("v1"));
            assertThat(s.compareSet("k", b("v1"), b("v2"))).isEqualTo(b("v2"));
            assertThat(s.get("k")).isEqualTo(b("v2"));
        } finally {
            closeAll(st);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "tcp"})
    void getBlocksUntilAnotherClientSetsAndWaitTimesOut(String kind) throws Exception {
        List<Store> st = stores(kind, 2);
        try {
            CompletableFuture<byte[]> late = new CompletableFuture<>();
            Thread getter = Thread.ofVirtual().start(() -> {
                try {
                    late.complete(st.get(0).get("late"));
                } catch (Throwable e) {
                    late.completeExceptionally(e);
                }
            });
            ThreadStates.awaitParkedIn(getter, "dev.jtrain.comm.store.", "get"); // waiting for a key nobody set yet
            assertThat(late).as("get of an absent key returned").isNotDone();
            st.get(1).set("late", b("here"));
            assertThat(late.get(10, TimeUnit.SECONDS)).isEqualTo(b("here"));
            st.get(0).wait(List.of("late"), 1_000);
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> st.get(0).wait(List.of("late", "never"), 200))
                    .isInstanceOf(CommTimeoutException.class).hasMessageContaining("never");
            assertThat((System.nanoTime() - t0) / 1e6).isBetween(150.0, 3_000.0);
            assertThatThrownBy(() -> st.get(1).get("never", 100)).isInstanceOf(CommTimeoutException.class);
        } finally {
            closeAll(st);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "tcp"})
    void prefixStoresDoNotSeeEachOthersKeys(String kind) {
        List<Store> st = stores(kind, 1);
        try {
            Supplier<Store> a = () -> new PrefixStore("attempt0", st.get(0));
            Store b = new PrefixStore("attempt1", st.get(0));
            a.get().set("addr", b("A"));
            b.set("addr", b("B"));
            assertThat(a.get().get("addr")).isEqualTo(b("A"));
            assertThat(b.get("addr")).isEqualTo(b("B"));
            assertThat(st.get(0).get("attempt1/addr")).isEqualTo(b("B"));
            assertThatThrownBy(() -> new PrefixStore("attempt2", st.get(0)).get("addr", 50)).isInstanceOf(CommTimeoutException.class);
        } finally {
            closeAll(st);
        }
    }
}
