# The throughput of vdpbf16ps alone: 24 independent accumulators (as many as the GEMM micro-kernel keeps), no loads.
#   void peak(long iterations)
    .intel_syntax noprefix
    .text
    .globl peak
peak:
    vpxord zmm30, zmm30, zmm30
    vpxord zmm31, zmm31, zmm31
1:
    .irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23
    vdpbf16ps zmm\r, zmm30, zmm31
    .endr
    dec rdi
    jnz 1b
    vzeroupper
    ret
    .section .note.GNU-stack,"",@progbits
