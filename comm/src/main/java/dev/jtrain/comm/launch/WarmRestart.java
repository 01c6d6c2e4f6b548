package dev.jtrain.comm.launch;

import dev.jtrain.comm.engine.EngineEnv;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.ToIntFunction;

/**
 * Restarting a rank in the JVM it already runs in ("warm restart"). When a restart of the group follows the loss of
 * another rank or node, the ranks that survived keep their process: the failed attempt releases what it holds, the
 * rank tells its launcher it is parked, and it runs the next attempt when the launcher sends that attempt's
 * rendezvous variables. Its classes stay loaded and its kernels compiled, so only the ranks whose process was lost
 * start cold. A fresh JVM spends most of its first seconds compiling, and on a host whose ranks all restart the
 * compilers of every rank compete for the same cores (bench/MEASUREMENTS.md, "Compile work and cold code of a
 * restarted rank"). The idea is NVIDIA's in-process restart (nvidia-resiliency-ext) and torchft's live replicas: a
 * failure elsewhere should not cost the healthy processes their state.
 *
 * <p>The launcher offers it by setting {@value #ENV}=1; a rank program that supports it runs its attempts through
 * {@link #run}. Protocol, one UTF-8 line per message:
 * <ul>
 *   <li>rank's stdout → launcher: {@code READY} once, when the rank runs its attempts this way; {@code PARKED status}
 *       after an attempt failed and released its resources;</li>
 *   <li>launcher → rank's stdin: {@code abort why} (another rank failed: stop the running attempt now, see
 *       {@link AbortSignal}); {@code stop why} (the group is to change: stop at the next step boundary, that step
 *       saved); {@code restart vars} (run the next attempt with these variables over the process
 *       environment, URL-encoded {@code k=v} joined by {@code &}); {@code exit status}. End of input means the launcher
 *       is gone: the rank exits with its last status.</li>
 * </ul>
 * A rank that does not park within the launcher's stop grace is killed and started again cold, as is any rank of a
 * launcher started with {@code --cold-restarts}.
 */
public final class WarmRestart {
    /** Set to 1 by the launcher when it restarts ranks warm. */
    public static final String ENV = "JTRAIN_WARM_RESTART";
    /**
     * Set to 1 for an attempt that only warms the JVM up and must not meet the group: the launcher of a node about to
     * rejoin a running job starts its ranks this way, lets them load and compile what a step uses while the others
     * still train, and restarts them warm into the regrouped job once they parked with {@link #WARMED_UP}.
     */
    public static final String WARM_UP_ENV = "JTRAIN_WARM_UP";
    /** The status of an attempt that stopped at a step boundary on {@link AbortSignal#requestStop}, its step saved. */
    public static final int STOPPED_FOR_REGROUP = 75; // EX_TEMPFAIL: nothing is wrong, run it again
    /** The status of a warm-up attempt ({@link #WARM_UP_ENV}) that is done. */
    public static final int WARMED_UP = 76;
    /** Starts the rank's control lines: a byte no text output begins with, so that they can not be mistaken. */
    static final String MARK = "\u0001jtrain-rank ";
    static final String READY = MARK + "ready";
    static final String PARKED = MARK + "parked ";
    static final String ABORT = "abort ", STOP = "stop ", RESTART = "restart ", EXIT = "exit ";

    private WarmRestart() {}

    /**
     * One attempt of a rank.
     *
     * @param env         the variables of this attempt: the process environment with the launcher's for the attempt
     * @param startedAtMs when this attempt started (wall clock): the JVM's start for the first, the launcher's
     *                    message for a warm one
     * @param warm        whether an earlier attempt ran in this JVM
     * @param abort       fired when the launcher stops this attempt because another rank failed
     */
    public record Attempt(EngineEnv env, long startedAtMs, boolean warm, AbortSignal abort) {
        /** The only attempt of a process that is not restarted warm. */
        public static Attempt cold(EngineEnv env) {
            return new Attempt(env, ManagementFactory.getRuntimeMXBean().getStartTime(), false, AbortSignal.none());
        }
    }

    /** Whether this attempt is a warm-up only ({@link #WARM_UP_ENV}). */
    public static boolean warmUpOnly(EngineEnv env) { return "1".equals(env.get(WARM_UP_ENV)); }

    /** Whether the launcher that started this process restarts it warm. */
    public static boolean offered(EngineEnv env) { return "1".equals(env.get(ENV)); }

    /**
     * Runs {@code attempt} until one returns 0, parking between attempts as the class comment describes; returns the
     * exit status for the process. {@code beforePark} runs after a failed attempt, before the launcher is told (free
     * what the attempt left to the garbage collector, undo process-wide settings).
     */
    public static int run(EngineEnv first, ToIntFunction<Attempt> attempt, Runnable beforePark, PrintStream out, InputStream in) {
        Messages messages = new Messages(in);
        messages.start();
        synchronized (out) {
            out.println(READY);
            out.flush();
        }
        Attempt a = new Attempt(first, ManagementFactory.getRuntimeMXBean().getStartTime(), false, messages.current);
        while (true) {
            int status = attempt.applyAsInt(a);
            if (status == 0) return 0;
            beforePark.run();
            synchronized (out) {
                out.println(PARKED + status);
                out.flush();
            }
            Message m = messages.next(status);
            if (m.restart() == null) return m.exitStatus();
            Map<String, String> vars = new HashMap<>(first.vars());
            vars.putAll(m.restart());
            a = new Attempt(EngineEnv.of(vars, first.hostName()), m.receivedAtMs(), true, m.abort());
        }
    }

    /** A message from the launcher to a parked rank: the next attempt's variables, or the status to exit with. */
    private record Message(Map<String, String> restart, AbortSignal abort, int exitStatus, long receivedAtMs) { }

    /** Reads the launcher's messages on a thread of its own, so that an abort reaches an attempt that is busy. */
    private static final class Messages {
        private final BufferedReader in;
        private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
        /** The running attempt's signal; the reader makes the next one when a restart arrives, so no abort is lost. */
        private volatile AbortSignal current = new AbortSignal();

        Messages(InputStream in) { this.in = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)); }

        void start() {
            Thread.ofPlatform().daemon().name("jtrain-warm-restart").start(() -> {
                try {
                    String line;
                    while ((line = in.readLine()) != null) {
                        if (line.startsWith(ABORT)) {
                            current.fire(line.substring(ABORT.length()));
                        } else if (line.startsWith(STOP)) {
                            current.requestStop(line.substring(STOP.length()));
                        } else if (line.startsWith(RESTART)) {
                            AbortSignal next = new AbortSignal();
                            current = next;
                            queue.add(new Message(decode(line.substring(RESTART.length())), next, 0, System.currentTimeMillis()));
                        } else if (line.startsWith(EXIT)) {
                            queue.add(new Message(null, null, Integer.parseInt(line.substring(EXIT.length()).strip()), 0));
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // the launcher is gone or spoke nonsense: treated as the end of its messages
                }
                queue.add(Boolean.FALSE);
            });
        }

        /** The next restart or exit; {@code lastStatus} when the launcher's input ends first. */
        Message next(int lastStatus) {
            try {
                Object o = queue.take();
                if (o instanceof Message m) return m;
                queue.add(o); // stays ended
                return new Message(null, null, lastStatus, 0);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Message(null, null, lastStatus, 0);
            }
        }
    }

    static String encode(Map<String, String> vars) {
        StringJoiner j = new StringJoiner("&");
        vars.forEach((k, v) -> j.add(URLEncoder.encode(k, StandardCharsets.UTF_8) + "=" + URLEncoder.encode(v == null ? "" : v, StandardCharsets.UTF_8)));
        return j.toString();
    }

    static Map<String, String> decode(String s) {
        Map<String, String> m = new HashMap<>();
        if (s.isBlank()) return m;
        for (String kv : s.split("&")) {
            int eq = kv.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("malformed variable in a restart message: " + kv);
            m.put(URLDecoder.decode(kv.substring(0, eq), StandardCharsets.UTF_8), URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return m;
    }
}
