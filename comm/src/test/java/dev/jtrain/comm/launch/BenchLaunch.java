package dev.jtrain.comm.launch;

import java.util.Map;

/** {@code BenchLaunch NPROC WORKER-ARGS...}: runs {@link WorkerMain} on NPROC full-JIT JVMs via the launcher. */
public final class BenchLaunch {
    private BenchLaunch() { }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
        var o = new LaunchOptions(n, 1, 0, "127.0.0.1", 0, 0, null, 2_000, JvmRanks.benchCommand(rest));
        System.exit(new Launcher(o, System.out, Map.of(RendezvousEnv.TIMEOUT_MS, "60000")).run());
    }
}
