package dev.jtrain.comm.launch;

import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.topology.HostIdentity;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * How the launchers of a multi-node job agree, through the job's store, on what happened to each attempt (the part
 * of torchelastic's agent rendezvous a fixed-size job needs). Every attempt ("epoch") has its own keys:
 * <ul>
 *   <li>{@code failed}: the first failure reported by any node (first writer wins), as {@code status|kind|what}; kind
 *       {@code regroup} when nothing failed and a node asks to join, so the running ranks may stop at a step boundary
 *       after saving that step ({@link #reportRegroup});</li>
 *   <li>{@code failures}: a counter every launcher polls while its ranks run, so a failure on one node stops the
 *       ranks on all nodes;</li>
 *   <li>{@code done/N}: node N's ranks all exited 0; the job succeeds only when every node is done;</li>
 *   <li>{@code stopped/N}: node N's ranks are gone; the next epoch starts only when every node has stopped, so no
 *       rank of the old epoch meets a rank of the new one;</li>
 *   <li>{@code started/N}: node N started its ranks in this epoch. A launcher that starts and finds its node already
 *       started in the newest epoch is a replacement (its host or its launcher was lost and the cluster manager
 *       started it again): it reports that epoch failed and joins the next one ({@link #rejoinEpoch}).</li>
 *   <li>{@code members}: the nodes (by their index at launch) that run the epoch. Epoch 0 has all of them. When a
 *       node has not stopped its ranks for the next epoch within the join timeout (its host is gone for good), or its
 *       launcher is known to be gone ({@code gone/N}, which the store sets when that launcher's connection ends) and
 *       every other node has stopped, the others continue without it if at least {@code --min-nodes} remain: every waiting node proposes the nodes it
 *       saw stop, the first proposal is the next epoch's membership (compare-and-set), and a node left out of it
 *       exits. Inside an epoch nodes are renumbered in that order, so ranks stay 0..world-1. A node left out whose
 *       launcher starts again asks to join ({@code join/N}); the running epoch then stops, and the next one takes it
 *       back ({@link #rejoinEpoch}).</li>
 *   <li>{@code claimed/N}: which launcher takes node N's place in the next epoch (first writer wins): the node's own
 *       restarted launcher, or a spare ({@link SpareNode}) that saw node N's launcher gone. The other one leaves.</li>
 * </ul>
 * Ranks see the epoch as {@code JTRAIN_RESTART_COUNT}, and their store keys are prefixed with it.
 *
 * <p>Threading: used by the launcher's supervising thread only.
 */
final class NodeAgreement {
    private final Store store;
    private final int nodeRank;
    private final int nnodes;
    /** Who this launcher is in a claim of a node's place ({@link #claim}). */
    private final String launcherId;

    NodeAgreement(Store store, int nodeRank, int nnodes) { this(store, nodeRank, nnodes, newLauncherId()); }

    /** {@code nodeRank} -1: a spare that has no node yet ({@link SpareNode}); it only reads the agreement and claims. */
    NodeAgreement(Store store, int nodeRank, int nnodes, String launcherId) {
        this.store = store;
        this.nodeRank = nodeRank;
        this.nnodes = nnodes;
        this.launcherId = launcherId;
    }

    private static final java.util.concurrent.atomic.AtomicInteger INSTANCES = new java.util.concurrent.atomic.AtomicInteger();

    /** This process's host and pid, for messages, and a sequence number (tests run several launchers in one process). */
    static String newLauncherId() {
        return HostIdentity.name() + " (pid " + ProcessHandle.current().pid() + ")#" + INSTANCES.incrementAndGet();
    }

    /** The host-and-pid part of a launcher id, as messages show it. */
    static String describe(String launcherId) {
        int hash = launcherId.lastIndexOf('#');
        return hash < 0 ? launcherId : launcherId.substring(0, hash);
    }

    String launcherId() { return launcherId; }

    private static String key(int epoch, String what) { return "launcher/epoch" + epoch + "/" + what; }

    /**
     * Why the epoch ended, as reported by whichever node saw a reason first. {@code regroup}: nothing failed, the
     * membership is to change (a node asks to join), so the running ranks may finish their step and save it before
     * they stop, and the next epoch recomputes nothing.
     */
    record Failure(int status, String what, boolean regroup) { }

    void reportFailure(int epoch, int status, String what) { report(epoch, status, what, false); }

    /** Ends the epoch for a planned change of membership; loses to a failure reported first. */
    void reportRegroup(int epoch, String what) { report(epoch, 1, what, true); }

    private void report(int epoch, int status, String what, boolean regroup) {
        byte[] desc = (status + "|" + (regroup ? "regroup" : "failed") + "|" + what).getBytes(StandardCharsets.UTF_8);
        store.compareSet(key(epoch, "failed"), new byte[0], desc);
        store.add(key(epoch, "failures"), 1);
    }

    boolean anyFailure(int epoch) { return store.add(key(epoch, "failures"), 0) > 0; }

    Failure failure(int epoch, long timeoutMs) {
        String[] s = new String(store.get(key(epoch, "failed"), timeoutMs), StandardCharsets.UTF_8).split("\\|", 3);
        return new Failure(Integer.parseInt(s[0]), s[2], s[1].equals("regroup"));
    }

    /** The nodes (launch indices, ascending) that run {@code epoch}: all of them unless the job shrank. */
    List<Integer> members(int epoch) {
        for (int e = epoch; e > 0; e--) {
            try {
                return parseMembers(store.get(key(e, "members"), 1));
            } catch (CommTimeoutException absent) {
                // decided in an earlier epoch, or never
            }
        }
        List<Integer> all = new ArrayList<>();
        for (int n = 0; n < nnodes; n++) all.add(n);
        return all;
    }

    private static List<Integer> parseMembers(byte[] b) {
        List<Integer> out = new ArrayList<>();
        for (String s : new String(b, StandardCharsets.UTF_8).split(",")) out.add(Integer.parseInt(s.strip()));
        return out;
    }

    /** Publishes where this node's checkpoint memory holder listens; a replacement launcher publishes its own. */
    void publishHolder(String hostPort, long budgetBytes) {
        store.set("launcher/holder-bytes/" + nodeRank, Long.toString(budgetBytes).getBytes(StandardCharsets.UTF_8));
        store.set("launcher/holder/" + nodeRank, hostPort.getBytes(StandardCharsets.UTF_8));
    }

    /** The smallest memory budget among the holders of {@code members} (each published its own before its address). */
    long holderBudget(List<Integer> members, long timeoutMs) {
        long min = Long.MAX_VALUE;
        for (int n : members)
            min = Math.min(min, Long.parseLong(new String(store.get("launcher/holder-bytes/" + n, timeoutMs), StandardCharsets.UTF_8)));
        return min;
    }

    /** The checkpoint memory holders of {@code members}, in order; waits for nodes that have not published yet. */
    List<String> holders(List<Integer> members, long timeoutMs) {
        List<String> out = new ArrayList<>();
        for (int n : members) {
            try {
                out.add(new String(store.get("launcher/holder/" + n, timeoutMs), StandardCharsets.UTF_8));
            } catch (CommTimeoutException e) {
                throw new CommTimeoutException("node " + n + "'s launcher did not publish its checkpoint memory holder within "
                        + timeoutMs + " ms; is it running?", e);
            }
        }
        return out;
    }

    /** Records that this node starts its ranks in {@code epoch}. */
    void started(int epoch) {
        store.set(key(epoch, "started/" + nodeRank), new byte[] {1});
        store.set(key(epoch, "begun"), new byte[] {1});
    }

    private boolean exists(String k) {
        try {
            store.get(k, 1);
            return true;
        } catch (CommTimeoutException absent) {
            return false;
        }
    }

    /**
     * The epoch a launcher starting now must join: 0 for a job starting, or the one after the newest if
     * <ul>
     *   <li>this node had already started ranks in it: this launcher replaces one that was lost with its ranks, so it
     *       reports that epoch failed (stopping the other nodes' ranks at once instead of at their timeouts);</li>
     *   <li>this launcher is a spare that has claimed the place of this node, whose launcher was lost
     *       ({@code spare}, {@link SpareNode}): the same, whether or not the node had started in it;</li>
     *   <li>the job continues without this node (it was left out, {@code --min-nodes}): the job grows back. This
     *       launcher asks to join ({@code join/N}) and stops the running epoch, and the next one has every member
     *       that stops plus this node. That costs a restart, so it is refused when none is left
     *       ({@code maxRestarts}), and the job goes on without this node.</li>
     * </ul>
     * A replacement or a rejoin first claims the node's place ({@link #claim}): when a spare took it already, this
     * launcher is not needed. The node marks itself stopped when it then waits for the others
     * ({@link #stoppedAndAwaitOthers}). Returns -1 when this is not a rejoin.
     *
     * @throws LeftOutException when the job continues without this node and has no restart left to take it back, or
     *                          when another launcher (a spare) has taken this node's place
     */
    int rejoinEpoch(int maxRestarts, boolean spare) {
        int e = newestEpoch();
        if (e < 0) return -1;
        if (!members(e).contains(nodeRank)) {
            if (e + 1 > maxRestarts)
                throw new LeftOutException("node " + nodeRank + " can not rejoin the job: it continues on nodes " + members(e)
                        + " and has no restart left to take this one back (" + e + " of --max-restarts " + maxRestarts + " used)");
            claimOrLeave(e);
            store.set(key(e, "join/" + nodeRank), new byte[] {1});
            reportRegroup(e, "node " + nodeRank + "'s launcher asks to rejoin the job (host " + HostIdentity.name() + ")");
            return e + 1;
        }
        if (!spare && !exists(key(e, "started/" + nodeRank))) return -1;
        claimOrLeave(e);
        reportFailure(e, 137, "node " + nodeRank + "'s launcher was lost with its ranks and " + (spare
                ? "a spare takes its place (host " + HostIdentity.name() + ")" : "restarted (host " + HostIdentity.name() + ")"));
        return e + 1;
    }

    private void claimOrLeave(int epoch) {
        String holder = claim(epoch, nodeRank);
        if (!holder.equals(launcherId))
            throw new LeftOutException("node " + nodeRank + "'s place after attempt " + epoch + " was taken by the launcher "
                    + describe(holder) + " (a spare): this launcher is not needed and leaves");
    }

    /**
     * Claims node {@code node}'s place in the epoch after {@code epoch} for this launcher; the first claim wins
     * (compare-and-set), so that a spare and the node's own restarted launcher, or two spares, never both run it.
     * Returns the id of the launcher that holds the place.
     */
    String claim(int epoch, int node) {
        byte[] mine = launcherId.getBytes(StandardCharsets.UTF_8);
        return new String(store.compareSet(key(epoch, "claimed/" + node), new byte[0], mine), StandardCharsets.UTF_8);
    }

    /** The newest epoch any node began, or -1 before the job's first. */
    int newestEpoch() {
        int e = -1;
        while (exists(key(e + 1, "begun"))) e++;
        return e;
    }

    /** {@code epoch}'s members and the nodes that asked to join after it began, by launch index. */
    private List<Integer> membersAndJoiners(int epoch) {
        List<Integer> out = new ArrayList<>(members(epoch));
        for (int n = 0; n < nnodes; n++) if (!out.contains(n) && exists(key(epoch, "join/" + n))) out.add(n);
        out.sort(null);
        return out;
    }

    void reportDone(int epoch) {
        store.set(key(epoch, "done/" + nodeRank), new byte[] {1});
        store.add(key(epoch, "done"), 1);
    }

    boolean allDone(int epoch, int members) { return store.add(key(epoch, "done"), 0) >= members; }

    /** Whether {@code node}'s ranks all exited 0 in {@code epoch}. */
    boolean done(int epoch, int node) { return exists(key(epoch, "done/" + node)); }

    /**
     * Marks this node's ranks as stopped and waits until every member's are; returns the members of the next epoch.
     * A member that has not stopped within {@code timeoutMs} is left out if at least {@code minNodes} remain (see the
     * class comment); so is, without waiting for the timeout, a member whose launcher is known to be gone (its store
     * connection ended: {@link #announce}) once every other member has stopped. This node may then find itself left
     * out, when another node decided first without it.
     *
     * @throws CommTimeoutException naming the nodes that did not stop, when fewer than {@code minNodes} did
     * @throws LeftOutException     when the next epoch's membership does not include this node
     */
    List<Integer> stoppedAndAwaitOthers(int epoch, long timeoutMs, int minNodes) {
        store.set(key(epoch, "stopped/" + nodeRank), new byte[] {1});
        String decided = key(epoch + 1, "members");
        List<Integer> present = membersAndJoiners(epoch);
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!exists(decided)) { // else the others went on already: adopt what they decided
            List<Integer> stopped = new ArrayList<>(), gone = new ArrayList<>(), waiting = new ArrayList<>();
            for (int n : present)
                (exists(key(epoch, "stopped/" + n)) ? stopped : exists(goneKey(n)) ? gone : waiting).add(n);
            if (waiting.isEmpty() && (gone.isEmpty() || stopped.size() >= minNodes)) {
                present = stopped;
                break;
            }
            if (System.nanoTime() > deadline) {
                if (!members(epoch).contains(nodeRank)) {
                    // a node asking to join never decides without the running members (they may be slow to stop
                    // mid-step): it waits for their decision, which includes it once it has stopped
                    store.get(decided, timeoutMs);
                    break;
                }
                if (stopped.size() < minNodes && !exists(decided)) {
                    List<Integer> missing = new ArrayList<>(waiting);
                    missing.addAll(gone);
                    throw new CommTimeoutException("launcher on node " + nodeRank + ": node(s) " + missing + " did not stop their"
                            + " ranks for restart " + (epoch + 1) + " within " + timeoutMs + " ms; their launcher or host may be"
                            + " gone, and " + stopped.size() + " node(s) are fewer than --min-nodes " + minNodes);
                }
                present = stopped;
                break;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CommTimeoutException("launcher on node " + nodeRank + ": interrupted while waiting for the other nodes", e);
            }
        }
        StringBuilder proposal = new StringBuilder();
        for (int n : present) proposal.append(proposal.isEmpty() ? "" : ",").append(n);
        byte[] mine = proposal.toString().getBytes(StandardCharsets.UTF_8);
        List<Integer> next = parseMembers(store.compareSet(decided, new byte[0], mine)); // the first proposal wins
        if (!next.contains(nodeRank))
            throw new LeftOutException("node " + nodeRank + " was left out of restart " + (epoch + 1) + " (nodes " + next
                    + " continue without it: it did not stop its ranks within " + timeoutMs + " ms)");
        return next;
    }

    private static String goneKey(int node) { return "launcher/gone/" + node; }

    /**
     * This node's launcher is up: the store is asked to record that it is gone when its connection ends (the process
     * died, with its host or alone), so that the others need not wait the join timeout for it. A replacement launcher
     * clears what its predecessor left.
     */
    void announce() {
        store.delete(goneKey(nodeRank));
        store.setWhenGone(goneKey(nodeRank), new byte[] {1});
    }

    /** Whether {@code node}'s launcher is known to be gone (its connection to the store ended). */
    boolean gone(int node) { return exists(goneKey(node)); }

    /** This node is not among the nodes that continue the job. */
    static final class LeftOutException extends RuntimeException {
        LeftOutException(String message) { super(message); }
    }

    /**
     * This node leaves the job; the store's host ({@code waitForOthers}) then waits, up to {@code timeoutMs}, until
     * every node has left, so that no node's last request meets a closed store. Never throws: the job's outcome is
     * decided already.
     */
    void departAndAwaitOthers(boolean waitForOthers, List<Integer> members, long timeoutMs) {
        try {
            store.set("launcher/departed/" + nodeRank, new byte[] {1});
            long until = System.nanoTime() + timeoutMs * 1_000_000L;
            // per node: a launcher left out of the job (a late replacement) departs too, and must not count for a member
            while (waitForOthers && System.nanoTime() < until && !members.stream().allMatch(n -> exists("launcher/departed/" + n)))
                Thread.sleep(20);
        } catch (RuntimeException e) {
            // the store is gone: nothing left to wait for
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

}
