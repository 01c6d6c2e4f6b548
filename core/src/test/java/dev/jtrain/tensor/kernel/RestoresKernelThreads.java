package dev.jtrain.tensor.kernel;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * For tests that set {@link Parallel#setThreads}: puts the kernel pool's size back after each test, so a test that
 * runs on one or two threads leaves the next test class in the fork the pool it started with.
 */
final class RestoresKernelThreads implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(RestoresKernelThreads.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NAMESPACE).put("threads", Parallel.threads());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        Parallel.setThreads(context.getStore(NAMESPACE).get("threads", Integer.class));
    }
}
