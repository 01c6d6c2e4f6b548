package dev.jtrain.comm.launch;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.store.Store;

import java.util.List;
import java.util.OptionalInt;

/**
 * A hot spare ({@code jtrain launch --spare}): a launcher with no node of its own. It warms its ranks up and parks
 * them, then waits until a node's launcher is lost (its connection to the store ended: the host died or was cut
 * off for good) and takes that node's place in the next attempt, so that the job restarts at full size into warm
 * JVMs instead of waiting for a replacement host to start and compile cold (its first step is most of a cold
 * recovery: bench/MEASUREMENTS.md). Managed clusters swap a faulty node for a new one (SageMaker HyperPod does); a
 * spare that already runs, warm, is the fast form of that. The restart itself is the one a replacement launcher gets
 * ({@link NodeAgreement#rejoinEpoch}).
 *
 * <p>Only a node whose launcher is gone is taken over: a rank that fails on a live node is restarted by that node's
 * launcher, and a hung or unreachable node whose launcher still holds its store connection is the node's own to
 * recover. Node 0 hosts the store and can not be replaced. When the job ends first, the spare ends too.
 *
 * <p>Threading: used by the launcher's supervising thread only.
 */
final class SpareNode {
    /** How often the spare looks for a lost node (a few tiny store requests). */
    static final long POLL_MS = 100;

    private final NodeAgreement view;
    private final int nnodes;
    private final int maxRestarts;

    /** How the wait ended: the node whose place this spare took, or why it is not needed. */
    record Wait(OptionalInt node, String why) { }

    SpareNode(Store store, int nnodes, int maxRestarts, String launcherId) {
        this.view = new NodeAgreement(store, -1, nnodes, launcherId);
        this.nnodes = nnodes;
        this.maxRestarts = maxRestarts;
    }

    /**
     * Blocks until a node's launcher is lost and this spare has claimed its place, or the job has ended (finished,
     * failed with no restart left, or its store closed). Runs {@code eachPoll} between looks (the launcher watches its
     * warming ranks there).
     */
    Wait awaitLostNode(Runnable eachPoll) {
        try {
            while (true) {
                eachPoll.run();
                int e = view.newestEpoch();
                if (e >= 0) {
                    List<Integer> members = view.members(e);
                    if (view.allDone(e, members.size())) return new Wait(OptionalInt.empty(), "the job finished");
                    if (e >= maxRestarts && view.anyFailure(e))
                        return new Wait(OptionalInt.empty(), "the job failed with no restart left (" + e + " of --max-restarts " + maxRestarts + " used)");
                    if (e < maxRestarts) {
                        for (int n = 1; n < nnodes; n++) {
                            if (view.gone(n) && !view.done(e, n) && view.claim(e, n).equals(view.launcherId()))
                                return new Wait(OptionalInt.of(n), "node " + n + "'s launcher was lost (its connection to the store ended)");
                        }
                    }
                }
                Thread.sleep(POLL_MS);
            }
        } catch (CommException storeGone) {
            return new Wait(OptionalInt.empty(), "the job's store is gone (" + storeGone.getMessage() + "): the job ended");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Wait(OptionalInt.empty(), "interrupted");
        }
    }
}
