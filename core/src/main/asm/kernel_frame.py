"""What the GEMM micro-kernel generators (gen_*_kernel.py) share: the System V frame of a kernel with the signature
    void kernel(const void *ap, const void *bp, float *out, long k, long panels, long ldo, long astride, long accumulate)
(the fp32 kernels take three more, the byte offsets of the A panel, the B panels and the tile from ap, bp and out)
and the write-back of its MR x NV-vector tile into `out`, stored or added. Not run by assemble.sh itself (its name
does not start with gen_)."""


def prologue(e, name, prefetch=False, offsets=False):
    """Saves the callee-saved registers the kernels use, loads astride into r10, accumulate into r11 and 3 * astride
    into r13, and returns at once when there are no panels. The panel loop starts at label 10. With prefetch, the
    kernel takes a ninth argument, loaded into rbp (saved too). With offsets, it takes three byte offsets instead,
    added to rdi, rsi and rdx: a caller passes whole Java arrays and where its panels start, rather than making a
    MemorySegment slice per call (garbage on every A panel of every product)."""
    assert not (prefetch and offsets)
    saved = ["rbx", "r12", "r13", "r14", "r15"] + (["rbp"] if prefetch else [])
    args = 8 * (len(saved) + 1)  # the stack arguments, past the saved registers and the return address
    e(f"""    .intel_syntax noprefix
    .text
    .globl {name}
{name}:""")
    for r in saved:
        e(f"    push {r}")
    e(f"""    mov r10, [rsp+{args}]           # astride
    mov r11, [rsp+{args + 8}]           # accumulate""")
    if prefetch:
        e(f"    mov rbp, [rsp+{args + 16}]          # the address to prefetch from in the last panel's pass")
    if offsets:
        e(f"""    add rdi, [rsp+{args + 16}]          # where the A panel starts in ap
    add rsi, [rsp+{args + 24}]          # where the B panels start in bp
    add rdx, [rsp+{args + 32}]          # where the tile starts in out""")
    e("""    lea r13, [r10+r10*2]        # 3 * astride
    test r8, r8
    jz 90f
10:""")
    return args


def write_tile_and_next_panel(e, mr, nv, reg, vector_bytes, prefetch=False, bias_arg=None):
    """Label 40: stores (accumulate == 0) or adds (accumulate == 1) accumulator registers reg0 .. reg(mr*nv - 1) into
    the tile at rdx, row r at rdx + ldo * r, one vaddps per vector so that out + acc is rounded once; then moves rdx
    to the next panel's columns and loops to label 10 while panels are left, and returns (label 90). With bias_arg
    (the stack offset of a pointer argument), accumulate == 2 stores acc + bias instead: the panel's nv vectors of
    the row vector the pointer holds, added to every row and rounded once, as adding into a C that held the bias
    would; the pointer is moved to the next panel's columns in its stack slot (rax holds it here: the k loops are
    done with the A rows, and each panel reloads them)."""
    e("""40:
    mov r15, rdx
    test r11, r11
    jz 50f""")
    if bias_arg is not None:
        e("    cmp r11, 2\n    je 70f")
    for r in range(mr):
        for v in range(nv):
            e(f"    vaddps {reg}{nv * r + v}, {reg}{nv * r + v}, [r15+{vector_bytes * v}]")
            e(f"    vmovups [r15+{vector_bytes * v}], {reg}{nv * r + v}")
        e("    add r15, r9")
    if bias_arg is not None:
        e(f"    jmp 60f\n70:\n    mov rax, [rsp+{bias_arg}]")
        for r in range(mr):
            for v in range(nv):
                e(f"    vaddps {reg}{nv * r + v}, {reg}{nv * r + v}, [rax+{vector_bytes * v}]")
                e(f"    vmovups [r15+{vector_bytes * v}], {reg}{nv * r + v}")
            e("    add r15, r9")
        e(f"    add qword ptr [rsp+{bias_arg}], {vector_bytes * nv}")
    e("    jmp 60f\n50:")
    for r in range(mr):
        for v in range(nv):
            e(f"    vmovups [r15+{vector_bytes * v}], {reg}{nv * r + v}")
        e("    add r15, r9")
    e(f"""60:
    add rdx, {vector_bytes * nv}
    dec r8
    jnz 10b
90:
    vzeroupper""" + ("""
    pop rbp""" if prefetch else "") + """
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    ret""")


def fma_loops(e, mr, nv, reg, vector_bytes, unroll, leftover):
    """The k loops of an fp32 kernel (gen_sgemm_*_kernel.py): returns step(addr, u), which emits one k step (nv B
    loads, mr broadcasts from memory into two alternating registers, mr * nv vfmadd231ps into accumulators 0 ..
    mr*nv - 1), and loops(label, addr, a_step), which emits the loop over blocks of `unroll` steps (count in r14),
    then one step at a time (count in `leftover`), advancing rsi and the A registers in a_step, and jumps to 40."""
    b0, a0, nr = mr * nv, mr * nv + nv, vector_bytes // 4 * nv

    def step(addr, u):
        for v in range(nv):
            e(f"    vmovups {reg}{b0 + v}, [rsi+{4 * nr * u + vector_bytes * v}]")
        for r in range(mr):
            a = a0 + (r % 2)
            e(f"    vbroadcastss {reg}{a}, dword ptr {addr(r, u)}")
            for v in range(nv):
                e(f"    vfmadd231ps {reg}{nv * r + v}, {reg}{b0 + v}, {reg}{a}")

    def loops(label, addr, a_step):
        e(f"{label + 5}:\n    test r14, r14\n    jz {label + 2}f\n{label}:")
        for u in range(unroll):
            step(addr, u)
        e(f"    add rsi, {4 * nr * unroll}")
        for r in a_step:
            e(f"    add {r}, {unroll * a_step[r]}")
        e(f"    dec r14\n    jnz {label}b\n{label + 2}:\n    test {leftover}, {leftover}\n    jz 40f\n{label + 1}:")
        step(addr, 0)
        e(f"    add rsi, {4 * nr}")
        for r in a_step:
            e(f"    add {r}, {a_step[r]}")
        e(f"    dec {leftover}\n    jnz {label + 1}b\n    jmp 40f")

    return step, loops
