package dev.jtrain.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The body of each JVM started by {@link MultiProcessCollectivesTest}: {@code check} runs collectives of several
 * sizes (so the selector picks different algorithms) and verifies them; {@code peer-dies} makes the last rank vanish
 * without cleanup before the second all-reduce, and the others verify that they fail with a CommException naming the
 * operation. Exit status 0 on success, 1 with a message on stderr otherwise.
 */
public final class MultiProcessCheck {
    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "check";
        // peer-hangs: an operation timeout far beyond the heartbeat's, so only the heartbeat can explain a quick failure
        ProcessGroupOptions options = ProcessGroupOptions.fromEnv().withTimeoutMs(mode.contains("hang") ? 60_000 : 10_000);
        // "check" measures the cost model like a real job; "peer-dies" skips the ~1 s probe to keep the suite fast
        if (!mode.equals("check")) options = options.withCostModel(dev.jtrain.comm.algo.CostModel.typicalSharedMemory(1 << 20));
        try (ProcessGroup g = ProcessGroups.initFromEnv(options)) {
            if (mode.equals("check")) check(g);
            else if (mode.equals("peer-hangs")) peerHangs(g);
            else if (mode.equals("hang-then-recover")) hangThenRecover(g);
            else peerDies(g);
            System.out.println("rank " + g.rank() + " OK " + mode + " link=" + g.linkKind((g.rank() + 1) % g.size()).label());
        } catch (Throwable t) {
            System.err.println("FAILED: " + t);
            t.printStackTrace();
            System.exit(1);
        }
    }

    static void check(ProcessGroup g) {
        int p = g.size(), r = g.rank();
        try (Arena arena = Arena.ofShared()) {
            for (long n : new long[] {1, 1001, 300_000, 3_000_000}) {
                MemorySegment buf = arena.allocate(n * 4, 64);
                for (long i = 0; i < n; i++) buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, (r + 1) * (1 + i % 5));
                g.allReduce(buf, n, DType.FLOAT32, ReduceOp.SUM);
                for (long i = 0; i < n; i += Math.max(1, n / 97)) {
                    float want = p * (p + 1) / 2f * (1 + i % 5);
                    expect(buf.getAtIndex(ValueLayout.JAVA_FLOAT, i) == want, "allReduce n=" + n + " i=" + i);
                }
                MemorySegment mine = arena.allocate(n * 4, 64), all = arena.allocate(n * 4 * p, 64);
                mine.fill((byte) (r + 1));
                g.allGather(mine, all, n, DType.FLOAT32);
                for (int s = 0; s < p; s++) expect(all.get(ValueLayout.JAVA_BYTE, s * n * 4 + n * 2) == s + 1, "allGather n=" + n);
                MemorySegment out = arena.allocate(n * 4, 64);
                g.reduceScatter(all, out, n, DType.FLOAT32, ReduceOp.MAX);
                expect(out.get(ValueLayout.JAVA_BYTE, n * 2) == r + 1, "reduceScatter n=" + n);
                g.broadcast(mine, n, DType.FLOAT32, p - 1);
                expect(mine.get(ValueLayout.JAVA_BYTE, 0) == p, "broadcast n=" + n);
            }
            // float[] (heap) buffers too: over TCP they are staged through native memory
            float[] token = {r};
            if (r == 0) g.send(token, 0, 1, 1, 3);
            if (r == 1) {
                g.recv(token, 0, 1, 0, 3);
                expect(token[0] == 0, "p2p");
            }
            float[] grads = new float[100_003];
            java.util.Arrays.fill(grads, r + 1);
            g.allReduce(grads, 0, grads.length, ReduceOp.AVG);
            expect(grads[100_002] == (p + 1) / 2f, "float[] allReduce AVG");
            g.barrier();
        }
    }

    static void peerDies(ProcessGroup g) {
        MemorySegment a = Arena.ofAuto().allocate(400_000, 64);
        g.allReduce(a, 100_000, DType.FLOAT32, ReduceOp.SUM);
        if (g.rank() == g.size() - 1) Runtime.getRuntime().halt(0); // vanish without closing anything
        try {
            g.allReduce(a, 100_000, DType.FLOAT32, ReduceOp.SUM);
            throw new IllegalStateException("all-reduce #2 succeeded although rank " + (g.size() - 1) + " is gone");
        } catch (CommException e) {
            expect(e.getMessage().contains("allReduce #2"), "message names the op and sequence: " + e.getMessage());
            System.out.println("rank " + g.rank() + " saw: " + e.getMessage());
        }
    }

    /**
     * The last rank stops itself (SIGSTOP) before the second all-reduce; the others must fail that all-reduce through
     * the heartbeat (JTRAIN_HEARTBEAT_TIMEOUT_MS, set by the test), naming the stopped rank, long before the 60 s
     * operation timeout. Then the last of them to name it wakes it (its pid is in CHECK_DIR, set by the test), and it
     * exits at once without a word, as if killed; woken by nobody, it leaves after 30 s anyway, so a failed check never leaves it behind.
     */
    static void peerHangs(ProcessGroup g) throws Exception {
        MemorySegment a = Arena.ofAuto().allocate(400_000, 64);
        g.allReduce(a, 100_000, DType.FLOAT32, ReduceOp.SUM);
        int last = g.size() - 1;
        java.nio.file.Path pidFile = java.nio.file.Path.of(System.getenv("CHECK_DIR"), "stopped.pid");
        if (g.rank() == last) {
            String pid = Long.toString(ProcessHandle.current().pid());
            java.nio.file.Files.writeString(pidFile, pid);
            new ProcessBuilder("sh", "-c", "sleep 30; kill -CONT " + pid).start();
            new ProcessBuilder("kill", "-STOP", pid).start().waitFor();
            Runtime.getRuntime().halt(0); // woken up: leave without a word, as if killed
        }
        long t0 = System.nanoTime();
        try {
            g.allReduce(a, 100_000, DType.FLOAT32, ReduceOp.SUM);
            throw new IllegalStateException("all-reduce #2 succeeded although rank " + last + " is stopped");
        } catch (CommException e) {
            double s = (System.nanoTime() - t0) / 1e9;
            expect(e.getMessage().contains("allReduce #2") && e.getMessage().contains("rank " + last + " ")
                    && e.getMessage().contains("sent no heartbeat"), "message names the op and the stopped rank: " + e.getMessage());
            expect(s < 12, "failed after " + s + " s, not through the heartbeat");
            System.out.printf("rank %d saw after %.1f s: %s%n", g.rank(), s, e.getMessage());
        }
        // Wake it only once every survivor has named it: woken early, it exits, and a survivor still waiting for its
        // heartbeat would see a closed connection instead. Each writes its mark before counting, so the last sees all.
        java.nio.file.Files.writeString(pidFile.resolveSibling("named-by-" + g.rank()), "");
        long named;
        try (var marks = java.nio.file.Files.list(pidFile.getParent())) {
            named = marks.filter(f -> f.getFileName().toString().startsWith("named-by-")).count();
        }
        if (named == last)
            new ProcessBuilder("kill", "-CONT", java.nio.file.Files.readString(pidFile).strip()).start().waitFor();
    }

    /**
     * First attempt: the last rank stops itself for good before the second all-reduce; the others fail through the
     * heartbeat and exit non-zero, and the launcher must kill the stopped rank and restart the group. Second attempt:
     * every rank completes.
     */
    static void hangThenRecover(ProcessGroup g) throws Exception {
        MemorySegment a = Arena.ofAuto().allocate(400_000, 64);
        g.allReduce(a, 100_000, DType.FLOAT32, ReduceOp.SUM);
        boolean first = "0".equals(System.getenv("JTRAIN_RESTART_COUNT"));
        if (first && g.rank() == g.size() - 1)
            new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start().waitFor();
        g.allReduce(a, 100_000, DType.FLOAT32, ReduceOp.SUM); // fails through the heartbeat in the first attempt
        expect(!first, "the first attempt's all-reduce #2 succeeded although rank " + (g.size() - 1) + " is stopped");
    }

    private static void expect(boolean ok, String what) {
        if (!ok) throw new IllegalStateException("check failed: " + what);
    }
}
