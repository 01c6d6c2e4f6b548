package dev.jtrain.comm;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Two operations one after the other, as one {@link Work}: the second is issued the moment the first completes
 * (from the first's completion, usually on its group's communication thread), with no wait on the caller's thread in
 * between. Hybrid sharding uses it to all-reduce a shard across hosts as soon as its reduce-scatter within the host is
 * done. If the first fails, the second is never issued and this Work fails with the first's exception.
 *
 * <p>Every rank must issue a group's operations in the same order. Completions of one group's operations are
 * reported in issue order, but a completion callback may run on another thread than the group's (whichever thread
 * registers it after the fact), so two chains' second operations could race to be issued. A {@link Sequence} issues
 * its chains' second operations strictly in the order the chains were made.
 */
public final class ChainedWork implements Work {
    private final Work first;
    private final Supplier<Work> next;
    private final CompletableFuture<Work> second = new CompletableFuture<>();

    private ChainedWork(Work first, Supplier<Work> next) {
        this.first = first;
        this.next = next;
    }

    /** {@code next} issued once {@code first} has completed successfully (alone: use a {@link Sequence} for several). */
    public static Work then(Work first, Supplier<Work> next) {
        ChainedWork c = new ChainedWork(first, next);
        first.future().whenComplete((v, e) -> c.issue());
        return c;
    }

    /** Issues the second operation (or passes on the first's failure); the first has completed. */
    private void issue() {
        if (!first.isSuccess()) {
            second.complete(first);
            return;
        }
        try {
            second.complete(next.get());
        } catch (RuntimeException | Error t) {
            second.completeExceptionally(t instanceof CommException ce ? ce
                    : new CommException(first.description() + " then: issuing the next operation failed: " + t, t));
        }
    }

    /**
     * Chains whose second operations are issued in the order the chains were made, each once its own first operation
     * and every earlier chain's have completed. Thread-safe.
     */
    public static final class Sequence {
        private final ArrayDeque<ChainedWork> waiting = new ArrayDeque<>();

        /** As {@link ChainedWork#then}, ordered after every chain this sequence made before. */
        public Work then(Work first, Supplier<Work> next) {
            ChainedWork c = new ChainedWork(first, next);
            synchronized (waiting) {
                waiting.add(c);
            }
            first.future().whenComplete((v, e) -> issueReady());
            return c;
        }

        private void issueReady() {
            synchronized (waiting) {
                while (!waiting.isEmpty() && waiting.peek().first.isCompleted()) waiting.poll().issue();
            }
        }
    }

    private Work secondOrNull() {
        return second.isDone() && !second.isCompletedExceptionally() ? second.join() : null;
    }

    @Override
    public boolean isCompleted() {
        Work s = secondOrNull();
        return s != null ? s.isCompleted() : second.isCompletedExceptionally();
    }

    @Override
    public boolean isSuccess() {
        Work s = secondOrNull();
        return s != null && s != first && s.isSuccess();
    }

    @Override
    public void waitFor() {
        first.waitFor();
        joinSecond().waitFor();
    }

    @Override
    public void waitFor(long timeoutMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        first.waitFor(timeoutMs);
        Work s;
        try {
            s = second.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new CommTimeoutException(description() + ": not completed within waitFor(" + timeoutMs + " ms): the next"
                    + " operation waits for earlier ones of its sequence; it is still running");
        } catch (ExecutionException e) {
            throw (CommException) e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException(description() + ": interrupted while waiting", e);
        }
        s.waitFor(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
    }

    private Work joinSecond() {
        try {
            return second.join();
        } catch (CompletionException e) {
            throw (CommException) e.getCause();
        }
    }

    @Override
    public CommException exception() {
        CommException e = first.exception();
        if (e != null) return e;
        if (second.isCompletedExceptionally()) {
            try {
                second.join();
            } catch (CompletionException x) {
                return (CommException) x.getCause();
            }
        }
        Work s = secondOrNull();
        return s == null ? null : s.exception();
    }

    @Override
    public CompletableFuture<Void> future() {
        return second.thenCompose(Work::future);
    }

    @Override
    public String description() {
        Work s = secondOrNull();
        return first.description() + " then " + (s == null || s == first ? "(not issued yet)" : s.description());
    }

    @Override
    public String toString() { return description() + (isCompleted() ? (isSuccess() ? " [done]" : " [failed]") : " [pending]"); }
}
