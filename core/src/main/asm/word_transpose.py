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
