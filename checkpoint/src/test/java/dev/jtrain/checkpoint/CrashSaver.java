package dev.jtrain.checkpoint;

import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ProcessGroups;

import java.nio.file.Path;
import java.util.Map;

/**
 * Child process of {@link CrashTest}: commits step 1, then starts an asynchronous save of step 2 and, on the rank named
 * by args[1], freezes the background writer right after its shard file is durable (before the commit), printing
 * {@code WRITTEN pid=<pid>} so the test can kill -9 it at exactly that point. Runs alone (args[2] = "single") or as a
 * launched rank ("launched").
 */
public final class CrashSaver {
    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]);
        int victim = Integer.parseInt(args[1]);
        ProcessGroup pg = args[2].equals("launched") ? ProcessGroups.initFromEnv() : null;
        int rank = pg == null ? 0 : pg.rank(), world = pg == null ? 1 : pg.size();
        ArrayState s = new ArrayState().whole("w", true, 1 << 20).add("m", new long[]{1 << 20}, (long) rank * (1 << 20) / world,
                (1 << 20) / world, false);
        Checkpointer c = new Checkpointer(pg);
        c.save(root, Map.of("model", s.fill(1)), SaveOptions.at(1)).join();
        if (rank == victim) c.setSpanSink((name, t0, t1) -> {
            if (name.startsWith("ckpt write")) {
                System.out.println("WRITTEN pid=" + ProcessHandle.current().pid());
                System.out.flush();
                try {
                    Thread.sleep(600_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        c.save(root, Map.of("model", s.fill(2)), SaveOptions.at(2).withAsync(true));
        System.out.println("RETURNED rank=" + rank);
        System.out.flush();
        Thread.sleep(600_000);
    }
}
