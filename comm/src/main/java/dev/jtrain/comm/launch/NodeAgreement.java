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
 *   <li>{@code failed}: the first failure reported by any node (first writer wins), as {@code status|what};</li>
 *   <li>{@code failures}: a counter every launcher polls while its ranks run, so a failure on one node stops the
 *       ranks on all nodes;</li>
 *   <li>{@code done/N}: node N's ranks all exited 0; the job succeeds only when every node is done;</li>
 *   <li>{@code stopped/N}: node N's ranks are gone; the next epoch starts only when every node has stopped, so no
 *       rank of the old epoch meets a rank of the new one;</li>
 *   <li>{@code started/N}: node N started its ranks in this epoch. A launcher that starts and finds its node already
 *       started in the newest epoch is a replacement (its host or its launcher was lost and the cluster manager
 *       started it again): it reports that epoch failed and joins the next one ({@link #rejoinEpoch}).</li>
 * </ul>
 * Ranks see the epoch as {@code JTRAIN_RESTART_COUNT}, and their store keys are prefixed with it.
 *
 * <p>Threading: used by the launcher's supervising thread only.
 */
final class NodeAgreement {
    private final Store store;
    private final int nodeRank;
    private final int nnodes;

    NodeAgreement(Store store, int nodeRank, int nnodes) {
        this.store = store;
        this.nodeRank = nodeRank;
        this.nnodes = nnodes;
    }

    private static String key(int epoch, String what) { return "launcher/epoch" + epoch + "/" + what; }

    /** The first failure of the epoch, as reported by whichever node saw one first. */
    record Failure(int status, String what) { }

    void reportFailure(int epoch, int status, String what) {
        byte[] desc = (status + "|" + what).getBytes(StandardCharsets.UTF_8);
        store.compareSet(key(epoch, "failed"), new byte[0], desc);
        store.add(key(epoch, "failures"), 1);
    }

    boolean anyFailure(int epoch) { return store.add(key(epoch, "failures"), 0) > 0; }

    Failure failure(int epoch, long timeoutMs) {
        String s = new String(store.get(key(epoch, "failed"), timeoutMs), StandardCharsets.UTF_8);
        int bar = s.indexOf('|');
        return new Failure(Integer.parseInt(s.substring(0, bar)), s.substring(bar + 1));
    }

    /** Publishes where this node's checkpoint memory holder listens; a replacement launcher publishes its own. */
    void publishHolder(String hostPort) {
        store.set("launcher/holder/" + nodeRank, hostPort.getBytes(StandardCharsets.UTF_8));
    }

    /** Every node's checkpoint memory holder, by node; waits for nodes that have not published yet. */
    List<String> holders(long timeoutMs) {
        List<String> out = new ArrayList<>();
        for (int n = 0; n < nnodes; n++) {
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
     * The epoch a launcher starting now must join: 0 for a job starting, or the one after the newest if this node had
     * already started ranks in it — this launcher replaces one that was lost with its ranks, so it reports that epoch
     * failed (stopping the other nodes' ranks at once instead of at their timeouts) and marks its node stopped.
     * Returns -1 when this is not a rejoin.
     */
    int rejoinEpoch() {
        int e = -1;
        while (exists(key(e + 1, "begun"))) e++;
        if (e < 0 || !exists(key(e, "started/" + nodeRank))) return -1;
        reportFailure(e, 137, "node " + nodeRank + "'s launcher was lost with its ranks and restarted (host " + HostIdentity.name() + ")");
        return e + 1;
    }

    void reportDone(int epoch) {
        store.set(key(epoch, "done/" + nodeRank), new byte[] {1});
        store.add(key(epoch, "done"), 1);
    }

    boolean allDone(int epoch) { return store.add(key(epoch, "done"), 0) >= nnodes; }

    /**
     * Marks this node's ranks as stopped and waits until every node's are.
     *
     * @throws CommTimeoutException naming the nodes that did not report within {@code timeoutMs}
     */
    void stoppedAndAwaitOthers(int epoch, long timeoutMs) {
        store.set(key(epoch, "stopped/" + nodeRank), new byte[] {1});
        List<String> keys = new ArrayList<>();
        for (int n = 0; n < nnodes; n++) keys.add(key(epoch, "stopped/" + n));
        try {
            store.wait(keys, timeoutMs);
        } catch (CommTimeoutException e) {
            List<Integer> missing = new ArrayList<>();
            for (int n = 0; n < nnodes; n++) {
                try {
                    store.get(keys.get(n), 1);
                } catch (CommTimeoutException absent) {
                    missing.add(n);
                }
            }
            throw new CommTimeoutException("launcher on node " + nodeRank + ": node(s) " + missing + " did not stop their"
                    + " ranks for restart " + (epoch + 1) + " within " + timeoutMs + " ms; their launcher or host may be"
                    + " gone", e);
        }
    }

    /**
     * This node leaves the job; the store's host ({@code waitForOthers}) then waits, up to {@code timeoutMs}, until
     * every node has left, so that no node's last request meets a closed store. Never throws: the job's outcome is
     * decided already.
     */
    void departAndAwaitOthers(boolean waitForOthers, long timeoutMs) {
        try {
            store.add("launcher/departed", 1);
            long until = System.nanoTime() + timeoutMs * 1_000_000L;
            while (waitForOthers && store.add("launcher/departed", 0) < nnodes && System.nanoTime() < until) Thread.sleep(20);
        } catch (RuntimeException e) {
            // the store is gone: nothing left to wait for
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
