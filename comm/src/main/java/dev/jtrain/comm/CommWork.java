package dev.jtrain.comm;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The {@link Work} of one queued operation: a CompletableFuture plus the description used in failure messages.
 * Completion is first-wins (the operation itself, the watchdog, or the group's close).
 */
final class CommWork implements Work {
    private final CompletableFuture<Void> future = new CompletableFuture<>();
    private final String description;
    private final Thread forbiddenWaiter;

    /** @param forbiddenWaiter the group's communication thread, which must never block on its own work */
    CommWork(String description, Thread forbiddenWaiter) {
        this.description = description;
        this.forbiddenWaiter = forbiddenWaiter;
    }

    boolean succeed() { return future.complete(null); }

    boolean fail(CommException e) { return future.completeExceptionally(e); }

    @Override public boolean isCompleted() { return future.isDone(); }

    @Override public boolean isSuccess() { return future.isDone() && !future.isCompletedExceptionally(); }

    @Override
    public void waitFor() {
        checkDeadlock();
        try {
            future.get();
        } catch (ExecutionException e) {
            throw rethrow(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException(description + ": interrupted while waiting", e);
        }
    }

    @Override
    public void waitFor(long timeoutMs) {
        checkDeadlock();
        try {
            future.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw rethrow(e);
        } catch (TimeoutException e) {
            throw new CommTimeoutException(description + ": not completed within waitFor(" + timeoutMs
                    + " ms); it is still running — wait longer, or look for a rank that did not issue it");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException(description + ": interrupted while waiting", e);
        }
    }

    @Override
    public CommException exception() {
        if (!future.isCompletedExceptionally()) return null;
        try {
            future.join();
            return null;
        } catch (CompletionException e) {
            return e.getCause() instanceof CommException ce ? ce : new CommException(description + " failed", e.getCause());
        }
    }

    @Override public CompletableFuture<Void> future() { return future.copy(); }

    @Override public String description() { return description; }

    @Override public String toString() { return description + (isCompleted() ? (isSuccess() ? " [done]" : " [failed]") : " [pending]"); }

    private void checkDeadlock() {
        if (Thread.currentThread() == forbiddenWaiter && !future.isDone()) {
            throw new IllegalStateException("waiting for " + description + " on the group's own communication thread "
                    + "would deadlock; wait from another thread or chain on future()");
        }
    }

    private RuntimeException rethrow(ExecutionException e) {
        // A fresh exception carries the waiter's stack; the operation's failure is its cause and keeps its message.
        Throwable c = e.getCause();
        if (c instanceof CommTimeoutException t) return new CommTimeoutException(t.getMessage(), t);
        if (c instanceof CollectiveMismatchException m) return new CollectiveMismatchException(m.getMessage());
        if (c instanceof BufferModifiedException b) return new BufferModifiedException(b.getMessage());
        if (c instanceof CommException ce) return new CommException(ce.getMessage(), ce);
        return new CommException(description + " failed: " + c, c);
    }
}
