#!/usr/bin/env python3
"""Minimal TCP throughput probe for the emulated hosts (no iperf needed).

  tput.py recv [PORT]                  # on the receiving host: accept one connection, count bytes
  tput.py send HOST [SECONDS] [PORT]   # on the sending host: send for SECONDS, print the rate

Both sides print one line "<Mbit/s> Mbit/s (<bytes> bytes in <seconds> s)"; the receiver's number is
the one to trust (the sender's includes data still queued in socket buffers). Example:

  hosts.sh exec 2 tput.py recv & sleep 0.3; hosts.sh exec 1 tput.py send jt-node2 3; wait
"""
import socket
import sys
import time

CHUNK = 1 << 20


def report(n, dt):
    print(f"{n * 8 / dt / 1e6:.0f} Mbit/s ({n} bytes in {dt:.2f} s)", flush=True)


def recv(port):
    with socket.create_server(("0.0.0.0", port), reuse_port=False) as srv:
        srv.settimeout(30)
        conn, _ = srv.accept()
        with conn:
            buf = bytearray(CHUNK)
            n, t0 = 0, None
            while True:
                k = conn.recv_into(buf)
                if not k:
                    break
                if t0 is None:
                    t0 = time.perf_counter()  # start at the first byte: excludes connect time
                n += k
            report(n, time.perf_counter() - (t0 or time.perf_counter()) or 1e-9)


def send(host, seconds, port):
    data = b"\0" * CHUNK
    with socket.create_connection((host, port), timeout=30) as s:
        n, t0 = 0, time.perf_counter()
        end = t0 + seconds
        while time.perf_counter() < end:
            s.sendall(data)
            n += len(data)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)  # wait for the receiver to close: all data delivered
        report(n, time.perf_counter() - t0)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["recv"]:
        recv(int(a[1]) if len(a) > 1 else 5201)
    elif a[:1] == ["send"] and len(a) >= 2:
        send(a[1], float(a[2]) if len(a) > 2 else 3.0, int(a[3]) if len(a) > 3 else 5201)
    else:
        sys.exit(__doc__)
