package dev.jtrain.comm.launch;

import com.sun.management.OperatingSystemMXBean;
import dev.jtrain.comm.store.BulkStoreServer;
import dev.jtrain.comm.transport.Transports;
import dev.jtrain.comm.store.StoreFrameDescriptor;
import dev.jtrain.comm.store.TcpStore;
import dev.jtrain.comm.store.TcpStoreOptions;
import dev.jtrain.comm.store.TcpStoreServer;
import dev.jtrain.comm.topology.HostIdentity;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Starts {@code nprocPerNode} copies of a command with the rendezvous environment, like torchrun: prefixes each
 * output line with {@code [rank N]}, hosts the store on node 0 (a free port when none is given), and when a rank
 * fails stops the others and reports the failing rank's exit status and its last error lines. With
 * {@code maxRestarts > 0} the whole group is restarted after a failure; each attempt sees
 * {@code JTRAIN_RESTART_COUNT} and a fresh store prefix.
 *
 * <p>Multi-node: each node runs its own launcher; node 0's hosts the store on every interface, and all of them
 * agree through it ({@link NodeAgreement}): a rank failing on any node stops the ranks on every node, all nodes
 * restart together as the next epoch (visible to ranks as {@code JTRAIN_RESTART_COUNT}), and the job succeeds only
 * when every node's ranks have exited 0. A launcher started again on a node whose launcher was lost with its ranks
 * (the host rebooted, the pod was rescheduled) rejoins: the lost epoch fails on every node and the next one starts
 * with all nodes ({@link NodeAgreement#rejoinEpoch}). The store lives on node 0, so node 0 can not be replaced. With
 * {@code minNodes} below {@code nnodes}, a node that does not come back within the join timeout (or whose launcher is
 * known gone) is left out and the others restart without it (fewer ranks, renumbered; {@code JTRAIN_JOB_WORLD_SIZE}
 * keeps the world size the job started with, so the trainer can keep its per-rank batch through gradient
 * accumulation). When that node's launcher starts again, the job grows back: the running attempt stops and the next
 * one has every node again (a restart, counted against {@code maxRestarts}). Nothing failed, so it is done the way
 * torchft lets a replica join: the joining node first warms its ranks up while the others train
 * ({@link #awaitWarmedUp}), and the running ranks stop at a step boundary with that step saved
 * ({@link #stopAtStepBoundary}), so the regroup recomputes nothing. A spare launcher ({@link SpareNode}) warms its
 * ranks up the same way ahead of any failure and takes the place of a node whose launcher is lost, so that a
 * fixed-size job restarts at full size into warm JVMs.
 *
 * <p>Every launcher also holds checkpoint memory: a token-checked key-value store ({@link BulkStoreServer}, values off
 * the heap) in its own process, which outlives
 * the ranks it restarts. Ranks find every node's holder in {@code JTRAIN_CKPT_HOLDERS} and keep in-memory
 * checkpoints there (the checkpoint module's peer-memory tier); a restarted group loads from it. An idle holder costs
 * a listening socket.
 *
 * <p>Threading: {@link #run} blocks the caller; two daemon threads per child copy its output.
 */
public final class Launcher {
    static final int LAST_LINES = 20;
    /** How often a multi-node launcher asks the store whether another node failed (one tiny request). */
    private static final long POLL_OTHERS_MS = 100;

    private final LaunchOptions options;
    private final PrintStream out;
    private final Map<String, String> extraEnv;
    /** This node's index at launch; a spare's is the stand-in whose rows it warms up on until it takes a lost node's. */
    private int nodeRank;

    public Launcher(LaunchOptions options, PrintStream out) { this(options, out, Map.of()); }

    /** {@code extraEnv} is added to every child's environment (tests use it). */
    public Launcher(LaunchOptions options, PrintStream out, Map<String, String> extraEnv) {
        this.options = options;
        this.out = out;
        this.extraEnv = Map.copyOf(extraEnv);
        this.nodeRank = options.nodeRank();
    }

    /** How one attempt ended on this node. */
    private record Outcome(int status, Child failed, boolean remote) {
        static final Outcome OK = new Outcome(0, null, false);
    }

    /**
     * One rank process: the rank it runs now (a warm restart may renumber it), the tail of its error output, and its
     * side of the {@link WarmRestart} protocol.
     */
    private static final class Child {
        final int local;
        final Process process;
        final Deque<String> lastErrLines = new ArrayDeque<>();
        final List<Thread> pumps = new ArrayList<>();
        final PrintStream control;
        volatile int rank;
        /** It announced that it runs its attempts through {@link WarmRestart}. */
        volatile boolean warm;
        /** The status of its failed attempt while it is parked, else -1. */
        volatile int parkedStatus = -1;

        Child(int rank, int local, Process process) {
            this.rank = rank;
            this.local = local;
            this.process = process;
            this.control = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        }

        Process process() { return process; }

        int rank() { return rank; }

        Deque<String> lastErrLines() { return lastErrLines; }

        List<Thread> pumps() { return pumps; }

        boolean parked() { return parkedStatus >= 0; }

        /** Sends one line of the protocol; false when the rank's input is closed (it is gone). */
        boolean send(String line) {
            control.println(line);
            return !control.checkError();
        }
    }

    /** Runs the job to the end; returns 0, or the exit status of the first rank that failed in the last attempt. */
    public int run() {
        String token = options.jobToken() != null ? options.jobToken() : HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        boolean multiNode = options.nnodes() > 1;
        TcpStoreServer server = null;
        BulkStoreServer holder = null;
        Path shmDir = null;
        TcpStore client = null;
        List<Child> running = new ArrayList<>();
        boolean succeeded = false;
        NodeAgreement agreement = null;
        // on SIGTERM the JVM runs this, not the finally below: the ranks go, and so does what the holder kept in
        // shared memory (its files are named while held, so that their pages can serve the next save)
        AtomicReference<Path> shmToRemove = new AtomicReference<>();
        Thread hook = Thread.ofPlatform().unstarted(() -> {
            stopAll(List.copyOf(running));
            HolderShm.remove(shmToRemove.get());
        });
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            if (nodeRank == 0) {
                var so = TcpStoreOptions.server(options.masterAddr(), options.masterPort(), token, options.joinTimeoutMs());
                server = new TcpStoreServer(so.serverBindHost(), options.masterPort(), token, StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 10_000);
            }
            int port = server != null ? server.port() : options.masterPort();
            if (multiNode) {
                client = TcpStore.create(TcpStoreOptions.client(options.masterAddr(), port, token, options.joinTimeoutMs()));
                if (!options.spare()) {
                    agreement = new NodeAgreement(client, nodeRank, options.nnodes());
                    agreement.announce();
                }
            }
            shmDir = HolderShm.create(out, HOLDER_BUDGET);
            shmToRemove.set(shmDir);
            holder = new BulkStoreServer(multiNode ? TcpStoreServer.ANY_ADDRESS : "127.0.0.1", 0, token,
                    StoreFrameDescriptor.DEFAULT_MAX_BODY_BYTES, 10_000, HOLDER_BUDGET, shmDir);
            String holderAt = (multiNode ? Transports.reachableAddress(client) : "127.0.0.1") + ":" + holder.port();
            if (options.spare()) {
                String id = NodeAgreement.newLauncherId();
                SpareNode spare = new SpareNode(client, options.nnodes(), options.maxRestarts(), id);
                out.printf("[launcher] spare on %s: %swaiting for a node's launcher to be lost%n", HostIdentity.name(),
                        options.warmRestarts() ? "warming its ranks up and " : "");
                // the ranks warm up while the spare watches: a node lost before they are done is not waited on
                List<Child> warming = options.warmRestarts()
                        ? startWarmUp(token, port, new NodeAgreement(client, -1, options.nnodes(), id), shmDir) : List.of();
                running.addAll(warming);
                long t0 = System.nanoTime();
                boolean[] ready = {warming.isEmpty()};
                SpareNode.Wait w = spare.awaitLostNode(() -> {
                    if (!ready[0] && warming.stream().allMatch(c -> c.parked() || !c.process().isAlive())) {
                        ready[0] = true;
                        long parked = warming.stream().filter(Child::parked).count();
                        synchronized (out) {
                            out.printf("[launcher] spare warmed its ranks up in %.1f s, standing by%s%n", (System.nanoTime() - t0) / 1e9,
                                    parked == warming.size() ? "" : "; " + (warming.size() - parked) + " ended before parking and will start cold");
                        }
                    }
                });
                List<Child> cold = warming.stream().filter(c -> !c.parked()).toList();
                running.removeAll(cold);
                stopAll(cold);
                if (w.node().isEmpty()) {
                    out.printf("[launcher] spare on %s: not needed, %s%n", HostIdentity.name(), w.why());
                    return 0;
                }
                if (!ready[0]) out.printf("[launcher] spare: ranks still warming up when needed: %d stopped, they start cold%n", cold.size());
                nodeRank = w.node().getAsInt();
                out.printf("[launcher] spare on %s takes the place of node %d: %s%n", HostIdentity.name(), nodeRank, w.why());
                agreement = new NodeAgreement(client, nodeRank, options.nnodes(), id);
                agreement.announce();
            }
            if (agreement != null) agreement.publishHolder(holderAt, HOLDER_BUDGET); // before a rejoin: the others restart with it
            long failedAtMs = 0; // when this node saw the previous attempt fail (wall clock), for the ranks' recovery timing
            int firstAttempt = 0;
            List<Integer> members = allNodes();
            if (agreement != null) {
                boolean wasMember = agreement.members(Math.max(0, agreement.newestEpoch())).contains(nodeRank);
                if (!wasMember && running.isEmpty() && options.warmRestarts() && options.maxRestarts() > agreement.newestEpoch())
                    running.addAll(awaitWarmedUp(startWarmUp(token, port, agreement, shmDir)));
                int rejoin = agreement.rejoinEpoch(options.maxRestarts(), options.spare());
                if (rejoin > 0) {
                    failedAtMs = System.currentTimeMillis();
                    if (wasMember)
                        out.printf("[launcher] node %d replaces a launcher lost with its ranks in attempt %d%s%n", nodeRank, rejoin - 1,
                                running.isEmpty() ? "" : " (its ranks warmed up)");
                    else
                        out.printf("[launcher] node %d rejoins the job, which continued without it: attempt %d stops and the group grows%n",
                                nodeRank, rejoin - 1);
                    if (rejoin > options.maxRestarts()) {
                        out.printf("[launcher] no restarts left (%d used)%n", options.maxRestarts());
                        return 1;
                    }
                    members = nextMembers(agreement, rejoin - 1, agreement.members(rejoin - 1));
                    out.printf("[launcher] restarting the group (restart %d of %d, %s)%n", rejoin, options.maxRestarts(),
                            together(members));
                    firstAttempt = rejoin;
                }
            }
            for (int attempt = firstAttempt; ; attempt++) {
                if (agreement != null) agreement.started(attempt);
                String holders = agreement != null ? String.join(",", agreement.holders(members, options.joinTimeoutMs())) : holderAt;
                long budget = agreement != null ? agreement.holderBudget(members, options.joinTimeoutMs()) : HOLDER_BUDGET;
                List<Child> parked = List.copyOf(running); // what the last attempt left: ranks waiting for a warm restart
                running.clear();
                running.addAll(start(token, port, attempt, failedAtMs, holders, budget, members, shmDir, parked, false));
                Outcome o = supervise(running, agreement, attempt, members.size(), options.warmRestarts() && attempt < options.maxRestarts());
                failedAtMs = System.currentTimeMillis();
                if (o.status() == 0) {
                    succeeded = true;
                    return 0;
                }
                if (agreement != null && o.failed() != null) {
                    agreement.reportFailure(attempt, o.status(), "rank " + o.failed().rank() + " on node " + nodeRank
                            + " (" + HostIdentity.name() + ") exited with status " + o.status());
                }
                int status = o.status();
                if (o.remote()) {
                    NodeAgreement.Failure f = agreement.failure(attempt, options.joinTimeoutMs());
                    out.printf("[launcher] node %d: %s; stopped this node's ranks%n", nodeRank, f.what());
                    status = f.status();
                }
                if (attempt >= options.maxRestarts()) {
                    if (options.maxRestarts() > 0) out.printf("[launcher] no restarts left (%d used)%n", options.maxRestarts());
                    return status;
                }
                if (agreement != null) members = nextMembers(agreement, attempt, members);
                out.printf("[launcher] restarting the group (restart %d of %d%s)%n", attempt + 1, options.maxRestarts(),
                        multiNode ? ", " + together(members) : "");
            }
        } finally {
            stopAll(List.copyOf(running));
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running already
            }
            if (agreement != null) {
                // node 0's store must outlive every node's last look at it: after a success all nodes are alive and
                // are waited for; after a failure one may be gone, so the wait is short
                agreement.departAndAwaitOthers(server != null, lastMembers, succeeded ? options.joinTimeoutMs() : DEPART_AFTER_FAILURE_MS);
            }
            if (client != null) client.close();
            if (server != null) server.close();
            if (holder != null) holder.close();
            HolderShm.remove(shmDir);
        }
    }

    /**
     * What the checkpoint memory holder may hold (off the heap): 2/5 of the host's memory, the rest left to the ranks.
     * Ranks check their in-memory checkpoints fit before they start keeping them there.
     */
    static final long HOLDER_BUDGET = ((OperatingSystemMXBean)
            ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize() / 5 * 2;

    /** Nodes in the attempt running last, for node 0's wait for the others to leave. */
    private List<Integer> lastMembers = List.of();

    private List<Integer> allNodes() {
        List<Integer> all = new ArrayList<>();
        for (int n = 0; n < options.nnodes(); n++) all.add(n);
        lastMembers = all;
        return all;
    }

    /** "all 2 nodes together", or which nodes continue when the job shrank. */
    private String together(List<Integer> members) {
        return members.size() == options.nnodes() ? "all " + members.size() + " nodes together"
                : members.size() + " of " + options.nnodes() + " nodes " + members + ", world " + members.size() * options.nprocPerNode();
    }

    /** Waits for the members of {@code epoch} to stop; the next epoch's members (fewer when a node is gone for good). */
    private List<Integer> nextMembers(NodeAgreement agreement, int epoch, List<Integer> members) {
        List<Integer> next = agreement.stoppedAndAwaitOthers(epoch, options.joinTimeoutMs(), options.minNodes());
        if (next.size() < members.size()) {
            List<Integer> left = new ArrayList<>(members);
            left.removeAll(next);
            boolean known = left.stream().allMatch(agreement::gone);
            out.printf("[launcher] node(s) %s %s: continuing without them on %d of %d nodes (--min-nodes %d)%n", left,
                    known ? "lost their launcher (its connection to the store ended)" : "did not come back within " + options.joinTimeoutMs() + " ms",
                    next.size(), options.nnodes(), options.minNodes());
        }
        lastMembers = next;
        return next;
    }

    /** How long node 0 keeps the store up after a failed job for other nodes to read the outcome. */
    private static final long DEPART_AFTER_FAILURE_MS = 3_000;

    /**
     * Starts this node's ranks for {@code attempt}: a rank parked by the previous attempt ({@link WarmRestart}) gets
     * the attempt's variables and continues in its JVM; every other rank is a new process.
     */
    private List<Child> start(String token, int port, int attempt, long failedAtMs, String holders, long holderBudget,
                              List<Integer> members, Path shmDir, List<Child> parked, boolean warmUpOnly) {
        List<Child> children = new ArrayList<>();
        long startedAtMs = System.currentTimeMillis();
        int node = members.indexOf(nodeRank); // renumbered when the job shrank
        int world = members.size() * options.nprocPerNode();
        for (int local = 0; local < options.nprocPerNode(); local++) {
            int rank = node * options.nprocPerNode() + local;
            Map<String, String> env = new LinkedHashMap<>();
            env.put(RendezvousEnv.RANK, Integer.toString(rank));
            env.put(RendezvousEnv.WORLD_SIZE, Integer.toString(world));
            env.put(RendezvousEnv.JOB_WORLD_SIZE, Integer.toString(options.worldSize()));
            env.put(RendezvousEnv.LOCAL_RANK, Integer.toString(local));
            env.put(RendezvousEnv.LOCAL_WORLD_SIZE, Integer.toString(options.nprocPerNode()));
            env.put(RendezvousEnv.MASTER_ADDR, options.masterAddr());
            env.put(RendezvousEnv.MASTER_PORT, Integer.toString(port));
            env.put(RendezvousEnv.JOB_TOKEN, token);
            env.put(RendezvousEnv.STORE_IN_LAUNCHER, "1");
            env.put(RendezvousEnv.RESTART_COUNT, Integer.toString(attempt));
            if (attempt > 0) {
                env.put(RendezvousEnv.RECOVERY_FAILED_AT_MS, Long.toString(failedAtMs));
                env.put(RendezvousEnv.RECOVERY_RESTARTED_AT_MS, Long.toString(startedAtMs));
            }
            env.put(RendezvousEnv.NODE_RANK, Integer.toString(node));
            env.put(RendezvousEnv.NNODES, Integer.toString(members.size()));
            env.put(RendezvousEnv.CKPT_HOLDERS, holders);
            env.put(RendezvousEnv.CKPT_HOLDER_BYTES, Long.toString(holderBudget));
            env.put(RendezvousEnv.CKPT_SHM_DIR, shmDir != null ? shmDir.toString() : "");
            env.put(WarmRestart.ENV, options.warmRestarts() && options.maxRestarts() > 0 ? "1" : "0");
            env.put(WarmRestart.WARM_UP_ENV, warmUpOnly ? "1" : ""); // empty: removed, also from a warm restart's variables
            Child warm = restartWarm(parked, local, rank, env);
            if (warm != null) {
                children.add(warm);
                continue;
            }
            ProcessBuilder pb = new ProcessBuilder(options.command());
            Map<String, String> penv = pb.environment();
            penv.putAll(extraEnv);
            String javaOptions = JitPolicy.childJavaOptions(options.nprocPerNode(), penv.get("JDK_JAVA_OPTIONS"));
            if (javaOptions != null) penv.put("JDK_JAVA_OPTIONS", javaOptions);
            env.forEach((k, v) -> {
                if (v.isEmpty()) penv.remove(k);
                else penv.put(k, v);
            });
            try {
                Child c = new Child(rank, local, pb.start());
                c.pumps().add(pump(c.process().getInputStream(), c, false));
                c.pumps().add(pump(c.process().getErrorStream(), c, true));
                children.add(c);
            } catch (IOException e) {
                children.forEach(c -> terminate(c.process(), true));
                throw new RendezvousConfigException("could not start rank " + rank + " command " + options.command() + ": " + e.getMessage(), e);
            }
        }
        for (Child p : parked) if (!children.contains(p)) terminate(p.process(), true); // not needed in this attempt
        return children;
    }

    /** The previous attempt's rank in slot {@code local}, told to run this attempt, if it is parked and still there. */
    private Child restartWarm(List<Child> parked, int local, int rank, Map<String, String> env) {
        for (Child c : parked) {
            if (c.local != local || !c.parked() || !c.process().isAlive()) continue;
            int before = c.rank();
            c.rank = rank;
            synchronized (c.lastErrLines()) {
                c.lastErrLines().clear();
            }
            c.parkedStatus = -1;
            if (!c.send(WarmRestart.RESTART + WarmRestart.encode(env))) return null;
            synchronized (out) {
                out.printf("[launcher] rank %d continues in its JVM (warm restart, pid %d)%s%n", rank, c.process().pid(),
                        before == rank ? "" : ", was rank " + before);
            }
            return c;
        }
        return null;
    }

    /**
     * Copies a child's stream line by line with its rank prefix, keeping the last lines of stderr; takes the
     * {@link WarmRestart} lines out of its stdout.
     */
    private Thread pump(InputStream in, Child c, boolean stderr) {
        Deque<String> tail = stderr ? c.lastErrLines() : null;
        return Thread.ofPlatform().daemon().name("jtrain-launch-pump-" + c.local).start(() -> {
            try (var r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (!stderr && line.startsWith(WarmRestart.MARK)) {
                        if (line.equals(WarmRestart.READY)) c.warm = true;
                        else if (line.startsWith(WarmRestart.PARKED)) c.parkedStatus = parseStatus(line.substring(WarmRestart.PARKED.length()));
                        continue;
                    }
                    synchronized (out) {
                        out.println("[rank " + c.rank() + "] " + line);
                    }
                    if (tail != null) {
                        synchronized (tail) {
                            tail.addLast(line);
                            if (tail.size() > LAST_LINES) tail.removeFirst();
                        }
                    }
                }
            } catch (IOException ignored) {
                // the child is gone
            }
        });
    }

    /**
     * Waits for every rank of this node; on the first failure here, or one reported by another node, stops the rest.
     * A node whose ranks all succeeded waits until every node's have (another may still fail and restart them all).
     */
    private Outcome supervise(List<Child> children, NodeAgreement agreement, int epoch, int members, boolean keepWarm) {
        List<Child> alive = new ArrayList<>(children);
        long nextPoll = System.nanoTime();
        boolean reportedDone = false;
        while (true) {
            for (var it = alive.iterator(); it.hasNext(); ) {
                Child c = it.next();
                if (c.parked() && c.parkedStatus == WarmRestart.STOPPED_FOR_REGROUP && agreement != null) {
                    // its ranks agreed on a step with ranks of a node whose launcher asked them to stop for a regroup
                    // before this one did: the same regroup, seen here through the ranks
                    stopAtStepBoundary(alive, agreement.failure(epoch, options.joinTimeoutMs()).what());
                    return new Outcome(1, null, true);
                }
                if (c.parked()) { // its attempt failed; its JVM waits for the next one
                    it.remove();
                    report(c, c.parkedStatus);
                    stop(alive, "rank " + c.rank() + " on node " + nodeRank + " failed", keepWarm);
                    return new Outcome(c.parkedStatus, c, false);
                }
                if (c.process().isAlive()) continue;
                it.remove();
                int status = c.process().exitValue();
                if (status != 0) {
                    stop(alive, "rank " + c.rank() + " on node " + nodeRank + " exited with status " + status, keepWarm);
                    drain(c);
                    report(c, status);
                    return new Outcome(status, c, false);
                }
            }
            if (alive.isEmpty()) {
                if (agreement == null) break;
                if (!reportedDone) {
                    agreement.reportDone(epoch);
                    reportedDone = true;
                }
                if (agreement.allDone(epoch, members)) break;
            }
            if (agreement != null && System.nanoTime() >= nextPoll) {
                nextPoll = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(POLL_OTHERS_MS);
                if (agreement.anyFailure(epoch)) {
                    NodeAgreement.Failure f = agreement.failure(epoch, options.joinTimeoutMs());
                    if (f.regroup() && keepWarm) stopAtStepBoundary(alive, f.what());
                    else stop(alive, f.regroup() ? f.what() : "a rank on another node failed", keepWarm);
                    return new Outcome(1, null, true);
                }
            }
            try {
                if (alive.isEmpty()) Thread.sleep(POLL_OTHERS_MS);
                else alive.getFirst().process().waitFor(20, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopAll(alive);
                return new Outcome(130, null, false);
            }
        }
        children.forEach(this::drain);
        return Outcome.OK;
    }

    /**
     * Stops the ranks of a failed attempt. With {@code keepWarm} (a restart follows), a rank that runs its attempts
     * through {@link WarmRestart} is asked to abort its attempt and park, and only a rank that has not parked within
     * the stop grace is killed; every other rank is stopped as {@link #stopAll} does.
     */
    private void stop(List<Child> ranks, String why, boolean keepWarm) {
        if (!keepWarm) {
            stopAll(ranks);
            return;
        }
        List<Child> cold = new ArrayList<>(), warm = new ArrayList<>();
        for (Child c : ranks) {
            if (c.warm && c.process().isAlive() && (c.parked() || c.send(WarmRestart.ABORT + why))) warm.add(c);
            else cold.add(c);
        }
        stopAll(cold);
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.stopGraceMs());
        for (Child c : warm) {
            if (!awaitParked(c, until)) {
                if (c.process().isAlive()) {
                    synchronized (out) {
                        out.printf("[launcher] rank %d did not stop its attempt within %d ms; killed, it restarts cold%n", c.rank(), options.stopGraceMs());
                    }
                }
                stopAll(List.of(c));
            }
        }
    }

    /**
     * A node that rejoins a job running without it, or a spare that may take a lost node's place, starts its ranks
     * first as warm-ups ({@link WarmRestart#WARM_UP_ENV}): they load and compile what a step uses while the others
     * keep training, and park. Only then does the node ask to join (or the spare wait), and the regroup restarts them
     * warm. What they would have spent cold on the group's critical path (over half of a grow-back's restart,
     * bench/MEASUREMENTS.md) is spent on this otherwise idle host instead. A rank that has not parked within the join
     * timeout is stopped and starts cold. {@code agreement} is read only: which nodes run the next attempt.
     */
    private List<Child> startWarmUp(String token, int port, NodeAgreement agreement, Path shmDir) {
        int epoch = agreement.newestEpoch() + 1;
        List<Integer> members = new ArrayList<>(agreement.members(epoch - 1));
        if (!members.contains(nodeRank)) members.add(nodeRank);
        members.sort(null);
        return start(token, port, epoch, 0, "", 0, members, shmDir, List.of(), true);
    }

    /** The warm-up ranks that parked within the join timeout; the others are stopped. */
    private List<Child> awaitWarmedUp(List<Child> ranks) {
        long t0 = System.nanoTime(), until = t0 + TimeUnit.MILLISECONDS.toNanos(options.joinTimeoutMs());
        List<Child> ready = new ArrayList<>(), not = new ArrayList<>();
        for (Child c : ranks) (awaitParked(c, until) ? ready : not).add(c);
        stopAll(not);
        synchronized (out) {
            out.printf("[launcher] node %d warmed its ranks up in %.1f s before asking to rejoin the job%s%n", nodeRank,
                    (System.nanoTime() - t0) / 1e9, not.isEmpty() ? "" : "; " + not.size() + " did not park and start cold");
        }
        return ready;
    }

    /**
     * Stops the ranks for a planned regroup (a node rejoins; nothing failed): each rank restarted warm is asked to
     * finish its step, save it and park ({@link AbortSignal#requestStop}; the ranks agree among themselves on the
     * step), so the next attempt recomputes nothing. A rank that has not parked within half the join timeout (the
     * other nodes wait that long for this one to stop) is aborted as a failed attempt's ranks are.
     */
    private void stopAtStepBoundary(List<Child> ranks, String why) {
        for (Child c : ranks) if (c.warm && c.process().isAlive() && !c.parked()) c.send(WarmRestart.STOP + why);
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.joinTimeoutMs() / 2);
        List<Integer> saved = new ArrayList<>(), not = new ArrayList<>();
        for (Child c : ranks) {
            if (c.warm) awaitParked(c, until);
            if (c.parked() && c.parkedStatus == WarmRestart.STOPPED_FOR_REGROUP) saved.add(c.rank());
            else if (c.parked() || c.process().isAlive()) not.add(c.rank()); // else it had finished: nothing to stop
        }
        synchronized (out) {
            if (not.isEmpty()) out.printf("[launcher] %s: ranks %s stopped at a step boundary, that step saved%n", why, saved);
            else out.printf("[launcher] %s: ranks %s did not stop at a step boundary within %d ms; stopping them now%n", why, not,
                    options.joinTimeoutMs() / 2);
        }
        stop(ranks, why, true);
    }

    /** Waits until {@code c} has parked, has exited, or {@code untilNanos} has come; whether it parked. */
    private static boolean awaitParked(Child c, long untilNanos) {
        try {
            while (!c.parked() && c.process().isAlive() && System.nanoTime() < untilNanos) c.process().waitFor(10, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return c.parked();
    }

    private static int parseStatus(String s) {
        try {
            return Math.max(1, Integer.parseInt(s.strip()));
        } catch (NumberFormatException e) {
            return 1;
        }
    }

    private void stopAll(List<Child> others) {
        others.forEach(o -> {
            if (o.parked()) o.control.close(); // a parked rank exits when its launcher's messages end
            terminate(o.process(), false); // SIGTERM: let them run shutdown hooks
        });
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.stopGraceMs());
        for (Child o : others) {
            try {
                long left = until - System.nanoTime();
                if (left <= 0 || !o.process().waitFor(left, TimeUnit.NANOSECONDS)) {
                    terminate(o.process(), true);
                    o.process().waitFor(2, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                terminate(o.process(), true);
            }
        }
        others.forEach(this::drain);
    }

    /**
     * Signals the child's descendants first, then the child: a rank started through a wrapper script (the
     * {@code jtrain} script runs java as its child) must not outlive the wrapper.
     */
    static void terminate(Process p, boolean force) {
        p.descendants().forEach(d -> {
            if (force) d.destroyForcibly();
            else d.destroy();
        });
        if (force) p.destroyForcibly();
        else p.destroy();
    }

    private void drain(Child c) {
        for (Thread t : c.pumps()) {
            try {
                t.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void report(Child c, int status) {
        List<String> lines;
        synchronized (c.lastErrLines()) {
            lines = List.copyOf(c.lastErrLines());
        }
        synchronized (out) {
            out.printf("[launcher] rank %d failed with exit status %d%s; stopped the other ranks%n", c.rank(), status,
                    c.parked() ? " (its JVM is kept for a warm restart)" : status == 137 ? " (signal 9, SIGKILL: if no one sent it, the kernel's out-of-memory killer did; `dmesg` says)"
                            : status > 128 ? " (signal " + (status - 128) + ")" : "");
            if (lines.isEmpty()) {
                out.printf("[launcher] rank %d wrote nothing to stderr%n", c.rank());
            } else {
                out.printf("[launcher] last %d stderr lines of rank %d:%n", lines.size(), c.rank());
                for (String l : lines) out.println("[launcher]   " + l);
            }
        }
    }
}
