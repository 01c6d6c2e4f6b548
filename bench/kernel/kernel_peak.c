/* The bf16 GEMM micro-kernel (core/src/main/asm/bf16_kernel_x86_64.S, the source of the shipped blob) timed outside
 * the JVM, against the throughput of its instruction (peak.S). Run by bench/bf16_kernel_peak.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void peak(long iterations);
void bf16_kernel(const int *ap, const int *bp, float *out, long kpairs, long panels, long ldo, long astride, long acc);

enum { MR = 12, NR = 32 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int *words(long n) {
    int *p = aligned_alloc(64, (n * 4 + 63) / 64 * 64);
    for (long i = 0; i < n; i++) p[i] = 0x3f803f80; /* a pair of bf16 ones */
    return p;
}

/* `calls` kernel calls, call i taking A panel i % apanels (kp pairs, p-major) past a B block of `bpanels` panels and
 * adding into rows of C ldc floats apart: the best GFLOP/s of `reps` repetitions */
static double sweep(long kp, long apanels, long bpanels, long ldc, long calls, int reps) {
    int *a = words(MR * kp * apanels), *b = words(NR * kp * bpanels);
    float *c = aligned_alloc(64, MR * apanels * ldc * 4);
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t = now();
        for (long i = 0; i < calls; i++) {
            long p = i % apanels;
            bf16_kernel(a + p * MR * kp, b, c + p * MR * ldc, kp, bpanels, ldc * 4, 0, 1);
        }
        double g = 2.0 * MR * NR * bpanels * kp * 2 * calls / (now() - t) / 1e9;
        if (g > best) best = g;
    }
    free(a); free(b); free(c);
    return best;
}

int main(void) {
    double best = 0;
    for (int r = 0; r < 5; r++) {
        long it = 50000000;
        double t = now();
        peak(it);
        double g = it * 24 * 64.0 / (now() - t) / 1e9;
        if (g > best) best = g;
    }
    printf("vdpbf16ps alone (24 accumulators)               %7.1f GFLOP/s\n", best);
    printf("micro-kernel, panels in L1 (128 k pairs)         %7.1f GFLOP/s\n", sweep(128, 1, 1, NR, 20000, 10));
    printf("micro-kernel, 512 KiB B block past 4 MiB of A    %7.1f GFLOP/s\n", sweep(512, 170, 8, 2048, 170, 20));
    puts("(best of several repetitions; 1 thread)");
    return 0;
}
