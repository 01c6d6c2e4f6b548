#!/usr/bin/env python3
"""Open MPI smoke test through ctypes: needs only libmpi.so.40 (openmpi-bin's libopenmpi3), no mpi.h
and no mpi4py. Each rank prints its rank, size, host name and an allreduce of all ranks; then rank 0
sends REPS x 64 MiB to rank size/2 (on the other host when ranks are spread evenly over two hosts)
and that rank prints the throughput, which shows whether traffic crossed the shaped links.

  salloc -N2 --ntasks-per-node=2 mpirun --allow-run-as-root python3 mpi_smoke.py
"""
import ctypes
import os
import socket
import time

lib = ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)  # GLOBAL: Open MPI's plugins need its symbols


def handle(name):
    # In Open MPI, MPI_COMM_WORLD, MPI_INT, MPI_SUM, ... are addresses of global objects.
    return ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(lib, name)))


WORLD, INT, CHAR, SUM = (handle(n) for n in ("ompi_mpi_comm_world", "ompi_mpi_int", "ompi_mpi_char", "ompi_mpi_op_sum"))

lib.MPI_Init(None, None)
r, s, total = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
lib.MPI_Comm_rank(WORLD, ctypes.byref(r))
lib.MPI_Comm_size(WORLD, ctypes.byref(s))
rank, size = r.value, s.value
lib.MPI_Allreduce(ctypes.byref(r), ctypes.byref(total), 1, INT, SUM, WORLD)
print(f"rank {rank}/{size} on {socket.gethostname()} allreduce(sum of ranks)={total.value}", flush=True)

n, reps, peer = 64 << 20, int(os.environ.get("REPS", "4")), size // 2
buf = ctypes.create_string_buffer(n)
lib.MPI_Barrier(WORLD)
t0 = time.perf_counter()
for _ in range(reps if peer > 0 else 0):
    if rank == 0:
        lib.MPI_Send(buf, n, CHAR, peer, 0, WORLD)
    elif rank == peer:
        lib.MPI_Recv(buf, n, CHAR, 0, 0, WORLD, None)
if rank == peer and peer > 0:
    print(f"rank 0 -> rank {peer}: {reps * n * 8 / (time.perf_counter() - t0) / 1e6:.0f} Mbit/s", flush=True)
lib.MPI_Finalize()
