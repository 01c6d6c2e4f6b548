package dev.jtrain.tensor.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A product in steady state allocates nothing on the heap: a training step runs tens of thousands of machine-code
 * calls, and a memory segment (or slice) made per call filled the young generation with a few MB a step, faults on
 * fresh pages included. On one thread nothing at all; split over two threads, the parallel region's two task objects
 * (the lambdas that carry the product's arguments to the workers, ~100 bytes), once per product and not per call into
 * the machine code, of which a product here makes dozens.
 */
@ExtendWith(RestoresKernelThreads.class)
class SgemmAllocationTest {
    @ParameterizedTest(name = "threads={0}")
    @ValueSource(ints = {1, 2})
    void steadyStateProductsOnTheMachineCodeAllocateNothingPerCall(int threadCount) {
        Assumptions.assumeTrue(SgemmKernel.NATIVE, "the fp32 machine-code kernel does not run here: " + SgemmKernel.backend());
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
                "this JVM does not count a thread's allocated bytes");
        Parallel.setThreads(threadCount);
        // rows not a multiple of MR and columns not of NR: full tiles, the ragged row panel and the tile buffer path;
        // big enough for the packed path (not SgemmSmall's) and, on two threads, for the split (m·n·k >= 2^20 with
        // either tile, 6 x 16 or 12 x 32)
        int m = 12 * SgemmKernel.MR + 1, n = 6 * SgemmKernel.NR + 5, k = 160;
        assertThat((long) m * n * k).isGreaterThanOrEqualTo(1L << 20);
        float[] a = new float[m * k], b = new float[k * n], c = new float[m * n];
        for (int i = 0; i < a.length; i++) a[i] = (i % 7) - 3;
        for (int i = 0; i < b.length; i++) b[i] = (i % 5) - 2;
        for (int i = 0; i < 20_000; i++) product(a, b, c, m, n, k, i); // until C2 has compiled the packing and the loops
        long before = threads.getCurrentThreadAllocatedBytes();
        int calls = 2_000;
        for (int i = 0; i < calls; i++) product(a, b, c, m, n, k, i);
        long bytes = threads.getCurrentThreadAllocatedBytes() - before;
        long perProduct = threadCount == 1 ? 8 : 160;
        assertThat(bytes).as("bytes allocated by %d products of %d x %d x %d on %d thread(s)", calls, m, n, k, threadCount)
                .isLessThan(calls * perProduct);
    }

    private static void product(float[] a, float[] b, float[] c, int m, int n, int k, int i) {
        // A and B both ways (row-major and p-major A panels; B copied or through the transposing pack), beta 0 and 1
        // (stored and added tiles), alpha != 1 (the tile buffer)
        boolean transA = i % 2 == 1, transB = i % 4 >= 2;
        Sgemm.sgemm(transA, transB, m, n, k, i % 5 == 4 ? 0.5f : 1f, a, 0, transA ? m : k, b, 0, transB ? k : n,
                i % 3 == 0 ? 0f : 1f, c, 0, n);
    }
}
