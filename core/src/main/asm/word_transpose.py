"""A 16 x 16 transpose of 32-bit words in registers, shared by the packers that need one (gen_bf16_cols.py,
gen_bf16_amx_pairs_t.py, gen_sgemm_cols.py). Not run by assemble.sh itself (its name does not start with gen_)."""


def transpose_16x16(e):
    """zmm0-15 hold the 16 rows of a 16 x 16 matrix of words (row j in zmm j); afterwards zmm p holds its column p
    (row j's word in lane j). zmm16-31 are overwritten. Four rounds of unpack/shuffle, 64 instructions: vpunpck[lh]dq,
    vpunpck[lh]qdq, then vshufi32x4 twice."""
    # zmm j: the 16 words of row j. Round 1: interleave dwords of rows (2i, 2i+1).
    for i in range(8):
        e(f"    vpunpckldq zmm{16 + 2 * i}, zmm{2 * i}, zmm{2 * i + 1}")
        e(f"    vpunpckhdq zmm{17 + 2 * i}, zmm{2 * i}, zmm{2 * i + 1}")
    # Round 2: qwords of (t0, t2), (t1, t3) within each group of 4 rows; zmm(4g + c) now holds, in 128-bit lane L,
    # column 4L + c of rows 4g .. 4g + 3.
    for g in range(4):
        t = 16 + 4 * g
        r = 4 * g
        e(f"    vpunpcklqdq zmm{r}, zmm{t}, zmm{t + 2}")
        e(f"    vpunpckhqdq zmm{r + 1}, zmm{t}, zmm{t + 2}")
        e(f"    vpunpcklqdq zmm{r + 2}, zmm{t + 1}, zmm{t + 3}")
        e(f"    vpunpckhqdq zmm{r + 3}, zmm{t + 1}, zmm{t + 3}")
    # Round 3: lanes 0 and 2 (0x88) or 1 and 3 (0xdd) of the groups of rows (0-3, 4-7) and (8-11, 12-15).
    for half in range(2):
        for c in range(4):
            a, b = 8 * half + c, 8 * half + 4 + c
            e(f"    vshufi32x4 zmm{16 + 8 * half + c}, zmm{a}, zmm{b}, 0x88")
            e(f"    vshufi32x4 zmm{16 + 8 * half + 4 + c}, zmm{a}, zmm{b}, 0xdd")
    # Round 4: column p = 4 * (which lane) + c from rows 0-7 (zmm16+) and 8-15 (zmm24+).
    for c in range(8):
        e(f"    vshufi32x4 zmm{c}, zmm{16 + c}, zmm{24 + c}, 0x88")
        e(f"    vshufi32x4 zmm{8 + c}, zmm{16 + c}, zmm{24 + c}, 0xdd")


# The two extra arguments of a packer called on whole Java arrays: src_off in r9, dst_off on the stack (no register
# pushed yet). A slice per call would be garbage on every panel group of every product.
OFFSETS = """    add rdi, r9                 # src_off: where the rows start in src
    add rdx, [rsp+8]            # dst_off: where the panel starts in dst"""


def transposed_panel_loops(e, name, nr, load_rows, store, row_bytes, step, unit, offsets=False):
    """The loops of a packer that fills `nr`-column panels from a matrix stored transposed (gen_bf16_cols.py,
    gen_sgemm_cols.py): void name(const float *src, long ld, dst, long blocks, long halves). For each half (16
    columns of the panel: 16 rows of the source) and each block of 16 panel rows: load_rows(e) fills zmm0-15 with the
    16 source rows of the block (rax at the first, rsi bytes apart), the transpose turns them into 16 panel rows, and
    `store` writes each, nr * 4 bytes apart. A block reads `row_bytes` of each source row; `step` names a panel row
    ("pair", "step") and `unit` a panel element ("words", "floats") in the comments. With offsets, two more
    arguments, the byte offsets of the rows in src and of the panel in dst, are added to rdi and rdx first (see
    OFFSETS)."""
    e(f"""    .intel_syntax noprefix
    .text
    .globl {name}
{name}:""")
    if offsets:
        e(OFFSETS)
    e(f"""    test rcx, rcx
    jz 9f
    test r8, r8
    jz 9f
1:
    mov r9, rdi                 # this half's rows, {"pair" if step == "pair" else "k"} block 0
    mov r10, rdx                # dst {step} 0, this half's 16 {unit}
    mov r11, rcx                # {"pair" if step == "pair" else "k"} blocks left
2:
    mov rax, r9""")
    load_rows(e)
    transpose_16x16(e)
    for p in range(16):
        e(f"    {store} [r10+{4 * nr * p}], zmm{p}")
    floats = row_bytes // 4
    e(f"""    add r9, {row_bytes:<20}# the next {floats} floats of each row
    add r10, {4 * nr * 16}
    dec r11
    jnz 2b
    mov rax, rsi
    shl rax, 4
    add rdi, rax                # the next 16 rows
    add rdx, 64                 # the panel's next 16 {unit}
    dec r8
    jnz 1b
9:
    vzeroupper
    ret""")
