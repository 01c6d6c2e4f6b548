package dev.jtrain.comm.transport;

import dev.jtrain.comm.store.InMemoryStore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * {@code InProcessTransportBench KIND BYTES ITERS}: two ranks as threads of this JVM exchange BYTES with sendRecv
 * ITERS times and send one way ITERS times; prints GB/s. A quick look at a transport's own cost, without process
 * start-up; the figures to quote come from {@code WorkerMain bench} across JVMs.
 */
public final class InProcessTransportBench {
    private InProcessTransportBench() { }

    public static void main(String[] args) throws Exception {
        String kind = args[0];
        long bytes = Long.parseLong(args[1]);
        int iters = Integer.parseInt(args[2]);
        InMemoryStore store = new InMemoryStore(30_000);
        Transport[] t = new Transport[2];
        var o = new TransportOptions(kind, "bench", 30_000, "bench-token", null, null, 0);
        TransportContractTest.onEveryRank(2, r -> t[r] = Transports.create(o, store, r, 2));
        MemorySegment[] src = {Arena.ofShared().allocate(bytes).fill((byte) 1), Arena.ofShared().allocate(bytes).fill((byte) 2)};
        MemorySegment[] dst = {Arena.ofShared().allocate(bytes).fill((byte) 0), Arena.ofShared().allocate(bytes).fill((byte) 0)};
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            TransportContractTest.onEveryRank(2, r -> {
                for (int i = 0; i < iters; i++) t[r].sendRecv(1 - r, src[r], 1 - r, dst[r], 1);
            });
            double s = (System.nanoTime() - t0) / 1e9;
            long t1 = System.nanoTime();
            TransportContractTest.onEveryRank(2, r -> {
                for (int i = 0; i < iters; i++) {
                    if (r == 0) t[0].send(1, 2, src[0]);
                    else t[1].recv(0, 2, dst[1]);
                }
            });
            double u = (System.nanoTime() - t1) / 1e9;
            System.out.printf("%s %d B x %d: sendRecv %.2f GB/s per direction, %.1f us/exchange; one-way %.2f GB/s%n",
                    kind, bytes, iters, bytes * (double) iters / s / 1e9, s / iters * 1e6, bytes * (double) iters / u / 1e9);
        }
        for (Transport x : t) x.close();
    }
}
