#!/usr/bin/env python3
"""MiB each way at once on one TCP connection, every byte checked.

    both_ways.py server ADDR PORT MIB SEED [SECONDS]   (accepts one connection)
    both_ways.py client ADDR PORT MIB SEED [SECONDS]

Each side sends MIB MiB of seeded pseudo-random data (its own stream: the
client's and the server's differ) from a second thread while it reads the
other's, then shuts its sending down and reads to the end. It compares
the SHA-256 of what it read with the one of what the other side sent,
prints "sent N received N intact" (or "differs") with the seconds taken
and TCP_INFO's total retransmissions, and exits 0 when intact. Past
SECONDS (if given) it exits 2 as a program exits, atexit handlers run (a
preload's statistics written): Python's own end on SIGINT skips them.
"""
import hashlib
import random
import signal
import socket
import struct
import sys
import threading
import time

CHUNK = 1 << 20


def stream(seed, role, mib):
    rng = random.Random(seed * 2 + (0 if role == "client" else 1))
    for _ in range(mib):
        yield rng.randbytes(CHUNK)


def main():
    role, addr, port, mib, seed = sys.argv[1:6]
    port, mib, seed = int(port), int(mib), int(seed)
    if len(sys.argv) > 6:
        def late(*_):
            print("timed out after %s s" % sys.argv[6], flush=True)
            sys.exit(2)
        signal.signal(signal.SIGALRM, late)
        signal.alarm(int(sys.argv[6]))
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    if role == "server":
        lst = socket.socket(fam, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind((addr, port))
        lst.listen(1)
        print("listening", flush=True)
        conn, _ = lst.accept()
        lst.close()
    else:
        conn = socket.create_connection((addr, port), timeout=30)
        conn.settimeout(None)
    t0 = time.monotonic()
    sent = [0]

    def send():
        for block in stream(seed, role, mib):
            conn.sendall(block)
            sent[0] += len(block)
        conn.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send, daemon=True)  # an interrupt ends the program
    sender.start()
    got = hashlib.sha256()
    received = 0
    while True:
        b = conn.recv(1 << 18)
        if not b:
            break
        got.update(b)
        received += len(b)
    sender.join()
    secs = time.monotonic() - t0
    want = hashlib.sha256()
    for block in stream(seed, "server" if role == "client" else "client", mib):
        want.update(block)
    info = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    total_retrans = struct.unpack_from("I", info, 100)[0]
    conn.close()
    ok = received == mib * CHUNK and got.digest() == want.digest()
    print("sent %d received %d %s in %.1f s, %d segments sent again" % (
        sent[0], received, "intact" if ok else "differs", secs, total_retrans), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
