#!/usr/bin/env bash
# The bf16 GEMM micro-kernel against the throughput of its own instruction, 1 thread, outside the JVM: assembles
# core/src/main/asm/bf16_kernel_x86_64.S (the source of the blob jtrain ships) with bench/kernel/peak.S and a small C
# driver. Shows how much of a product's time the kernel could still win back (bench/MEASUREMENTS.md, "bf16 GEMM").
# usage: bench/bf16_kernel_peak.sh          needs: gcc (Debian: build-essential), a CPU with AVX512_BF16
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v gcc > /dev/null || { echo "bf16_kernel_peak: needs gcc (Debian package build-essential)" >&2; exit 2; }
grep -qw avx512_bf16 /proc/cpuinfo || { echo "bf16_kernel_peak: this CPU has no AVX512_BF16" >&2; exit 2; }
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
{ cat "$ROOT/core/src/main/asm/bf16_kernel_x86_64.S"; printf '\n    .section .note.GNU-stack,"",@progbits\n'; } > "$OUT/kernel.S"
gcc -O2 -o "$OUT/kernel_peak" "$ROOT/bench/kernel/kernel_peak.c" "$ROOT/bench/kernel/peak.S" "$OUT/kernel.S"
"$OUT/kernel_peak"
