package dev.jtrain.comm;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * Two operations one after the other, as one {@link Work}: the second is issued the moment the first completes
 * (from the first's completion, on its group's communication thread), with no wait on the caller's thread in between.
 * Hybrid sharding uses it to all-reduce a shard across hosts as soon as its reduce-scatter within the host is done.
 * If the first fails, the second is never issued and this Work fails with the first's exception.
 *
 * <p>The second operation's group sees its operations issued in the order the first operations complete, so every
 * rank must chain onto operations of one group (completed in issue order) for the sequences to agree.
 */
public final class ChainedWork implements Work {
    private final Work first;
    private final CompletableFuture<Work> second = new CompletableFuture<>();

    private ChainedWork(Work first, Supplier<Work> next) {
        this.first = first;
        first.future().whenComplete((v, e) -> {
            if (e != null) {
                second.complete(first);
                return;
            }
            try {
                second.complete(next.get());
            } catch (RuntimeException | Error t) {
                second.completeExceptionally(t);
            }
        });
    }

    /** {@code next} issued once {@code first} has completed successfully. */
    public static Work then(Work first, Supplier<Work> next) {
        return new ChainedWork(first, next);
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
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        first.waitFor(timeoutMs);
        joinSecond().waitFor(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
    }

    private Work joinSecond() {
        try {
            return second.join();
        } catch (CompletionException e) {
            throw new CommException(description() + ": issuing the second operation failed: " + e.getCause(), e.getCause());
        }
    }

    @Override
    public CommException exception() {
        CommException e = first.exception();
        if (e != null) return e;
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
