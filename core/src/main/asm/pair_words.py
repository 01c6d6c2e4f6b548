"""What the pair packers (gen_bf16_pairs.py, gen_bf16_pairs_a.py) share. Not run by assemble.sh itself (its name does
not start with gen_)."""


def pair_group(src, dst, masked, src2=None):
    """Rows 2p and 2p+1 at src and src2 (default: rsi bytes on) into 16 pair words at dst: vcvtneps2bf16 rounds to
    nearest even (NaN kept), vpmovzxwd and a 16-bit shift place the halves. Masked: only the lanes set in k1 are read
    and written."""
    m, z = ("{k1}", "{k1}{z}") if masked else ("", "")
    src2 = src2 or f"{src}+rsi"
    return f"""    vcvtneps2bf16 ymm0{z}, zmmword ptr [{src}]
    vcvtneps2bf16 ymm1{z}, zmmword ptr [{src2}]
    vpmovzxwd zmm0, ymm0
    vpmovzxwd zmm1, ymm1
    vpslld zmm1, zmm1, 16
    vpord zmm0, zmm0, zmm1
    vmovdqu32 [{dst}]{m}, zmm0"""
