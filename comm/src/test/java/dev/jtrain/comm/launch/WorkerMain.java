package dev.jtrain.comm.launch;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.engine.EngineEnv;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportOptions;
import dev.jtrain.comm.transport.Transports;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * A rank program for tests and measurements that run real JVMs: {@code WorkerMain MODE [args]}, rendezvous from
 * the environment. Modes: hello, fail, fail-first-attempt, ring KIND BYTES, victim KIND, bench KIND BYTES ITERS,
 * ringbench KIND BYTES ITERS.
 */
public final class WorkerMain {
    private WorkerMain() { }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        if (mode.equals("warm")) System.exit(WarmRestart.run(EngineEnv.current(), WorkerMain::warmAttempt, () -> {}, System.out, System.in));
        try (Rendezvous rv = Rendezvous.fromEnv()) {
            switch (mode) {
                case "hello" -> {
                    barrier(rv, "hello");
                    System.out.println("hello from rank " + rv.rank() + " of " + rv.worldSize() + " local " + rv.localRank());
                }
                case "fail" -> {
                    barrier(rv, "fail");
                    if (rv.rank() == 1) {
                        System.err.println("about to fail");
                        System.err.println("boom: simulated failure in rank 1");
                        System.exit(3);
                    }
                    Thread.sleep(60_000);
                }
                case "fail-first-attempt" -> {
                    if (rv.restartCount() == 0 && rv.rank() == 1) System.exit(5);
                    barrier(rv, "again");
                    System.out.println("attempt " + rv.restartCount() + " ok; failed at " + System.getenv("JTRAIN_RECOVERY_FAILED_AT_MS")
                            + ", restarted at " + System.getenv("JTRAIN_RECOVERY_RESTARTED_AT_MS") + ", now " + System.currentTimeMillis());
                }
                case "ring" -> ring(rv, args[1], Long.parseLong(args[2]));
                case "victim" -> victim(rv, args[1]);
                case "bench" -> bench(rv, args[1], Long.parseLong(args[2]), Integer.parseInt(args[3]));
                case "ringbench" -> ringBench(rv, args[1], Long.parseLong(args[2]), Integer.parseInt(args[3]));
                default -> throw new IllegalArgumentException("unknown mode " + mode);
            }
        }
        System.exit(0); // also ends the rank that hosts nothing but waits on nothing
    }

    /**
     * One attempt of a rank restarted in its JVM: in attempt 0 rank 1 dies and the others wait at a barrier it never
     * reaches, until their launcher aborts the attempt; in later attempts every rank reports its process and attempt.
     */
    private static int warmAttempt(WarmRestart.Attempt a) {
        try (Rendezvous rv = Rendezvous.fromEnv(a.env())) {
            a.abort().onAbort(why -> {
                System.err.println("aborted: " + why);
                rv.close(); // fails the barrier's wait at once
            });
            if (rv.restartCount() == 0 && rv.rank() == 1) {
                System.err.println("rank 1 dies");
                System.exit(7);
            }
            try {
                barrier(rv, "warm");
            } catch (RuntimeException e) {
                return 3;
            }
            System.out.println("attempt " + rv.restartCount() + " of rank " + rv.rank() + " in pid " + ProcessHandle.current().pid()
                    + (a.warm() ? " warm" : " cold") + ", restarted at " + a.env().get(RendezvousEnv.RECOVERY_RESTARTED_AT_MS));
            return 0;
        }
    }

    private static void barrier(Rendezvous rv, String name) {
        rv.store().set(name + "/" + rv.rank(), new byte[]{1});
        List<String> keys = new ArrayList<>();
        for (int r = 0; r < rv.worldSize(); r++) keys.add(name + "/" + r);
        rv.store().wait(keys, rv.timeoutMs());
    }

    private static Transport transport(Rendezvous rv, String kind) {
        var o = new TransportOptions(kind, "w", rv.timeoutMs(), rv.jobToken(), null, null, 0);
        return Transports.create(o, rv.store(), rv.rank(), rv.worldSize());
    }

    private static MemorySegment pattern(long bytes, int rank) {
        MemorySegment m = Arena.ofAuto().allocate(bytes);
        for (long i = 0; i + 8 <= bytes; i += 8) m.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 31 + rank);
        return m;
    }

    private static void ring(Rendezvous rv, String kind, long bytes) {
        int n = rv.worldSize(), r = rv.rank();
        try (Transport t = transport(rv, kind)) {
            MemorySegment dst = Arena.ofAuto().allocate(bytes);
            t.sendRecv((r + 1) % n, pattern(bytes, r), (r + n - 1) % n, dst, 1);
            if (dst.mismatch(pattern(bytes, (r + n - 1) % n)) != -1) throw new AssertionError("ring data mismatch at rank " + r);
            barrier(rv, "ring-done");
            System.out.println("ring ok " + t.linkKind((r + 1) % n).label());
        }
    }

    /** Streams around the ring until a peer dies; survivors exit 42 after printing the CommException. */
    private static final dev.jtrain.comm.transport.Combiner FLOAT_MAX = new dev.jtrain.comm.transport.Combiner() {
        @Override public int elementBytes() { return 4; }

        @Override public void combine(MemorySegment acc, MemorySegment in, long elements) {
            for (long i = 0; i < elements; i++) {
                acc.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, Math.max(acc.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i),
                        in.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i)));
            }
        }
    };

    private static void victim(Rendezvous rv, String kind) {
        int n = rv.worldSize(), r = rv.rank();
        try (Transport t = transport(rv, kind)) {
            long bytes = 8L << 20;
            MemorySegment src = pattern(bytes, r), dst = Arena.ofAuto().allocate(bytes);
            for (int i = 0; ; i++) { // plain and reduce-on-arrival exchanges alternate: a kill may hit either
                if ((i & 1) == 0) t.sendRecv((r + 1) % n, src, (r + n - 1) % n, dst, 1);
                else t.sendRecvCombine((r + 1) % n, src, (r + n - 1) % n, dst, 1, FLOAT_MAX);
                if (i == 0) {
                    System.out.println("streaming");
                    System.out.flush();
                }
            }
        } catch (CommException e) {
            System.out.println("CommException: " + e.getMessage());
            System.out.flush();
            System.exit(42);
        }
    }

    /** 2 ranks exchange BYTES both ways ITERS times; rank 0 prints the per-direction bandwidth. */
    private static void bench(Rendezvous rv, String kind, long bytes, int iters) {
        int r = rv.rank(), peer = 1 - r;
        try (Transport t = transport(rv, kind)) {
            MemorySegment src = pattern(bytes, r), dst = Arena.ofAuto().allocate(bytes);
            for (int i = 0; i < 3; i++) t.sendRecv(peer, src, peer, dst, 1);
            barrier(rv, "bench-start");
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) t.sendRecv(peer, src, peer, dst, 1);
            double s = (System.nanoTime() - t0) / 1e9;
            if (dst.mismatch(pattern(bytes, peer)) != -1) throw new AssertionError("bench data mismatch");
            barrier(rv, "bench-done");
            // One direction only, like tcp_bw.py: rank 0 streams, rank 1 receives, then a 1-byte ack.
            MemorySegment ack = Arena.ofAuto().allocate(1);
            long t1 = System.nanoTime();
            for (int i = 0; i < iters; i++) {
                if (r == 0) t.send(peer, 2, src);
                else t.recv(peer, 2, dst);
            }
            if (r == 0) t.recv(peer, 3, ack);
            else t.send(peer, 3, ack);
            double uni = (System.nanoTime() - t1) / 1e9;
            barrier(rv, "bench-uni-done");
            if (r == 0) {
                System.out.printf("bench %s bytes=%d iters=%d: sendRecv %.2f GB/s per direction (%.2f GB/s both directions), "
                                + "%.1f us per exchange; one-way send %.2f GB/s%n",
                        kind, bytes, iters, bytes * (double) iters / s / 1e9, 2 * bytes * (double) iters / s / 1e9,
                        s / iters * 1e6, bytes * (double) iters / uni / 1e9);
            }
        }
    }

    /** Every rank sends BYTES to its right while receiving from its left, ITERS times; rank 0 prints the rate. */
    private static void ringBench(Rendezvous rv, String kind, long bytes, int iters) {
        int n = rv.worldSize(), r = rv.rank();
        try (Transport t = transport(rv, kind)) {
            MemorySegment src = pattern(bytes, r), dst = Arena.ofAuto().allocate(bytes);
            for (int i = 0; i < Math.max(20, iters / 4); i++) t.sendRecv((r + 1) % n, src, (r + n - 1) % n, dst, 1); // warm the JIT
            barrier(rv, "ringbench-start");
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) t.sendRecv((r + 1) % n, src, (r + n - 1) % n, dst, 1);
            double s = (System.nanoTime() - t0) / 1e9;
            if (dst.mismatch(pattern(bytes, (r + n - 1) % n)) != -1) throw new AssertionError("ringbench data mismatch");
            barrier(rv, "ringbench-done");
            if (r == 0) {
                System.out.printf("ringbench %s ranks=%d bytes=%d iters=%d: %.2f GB/s per link, %.1f us per step%n",
                        kind, n, bytes, iters, bytes * (double) iters / s / 1e9, s / iters * 1e6);
            }
        }
    }
}
